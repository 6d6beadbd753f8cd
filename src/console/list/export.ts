import { Readable, pipeline } from 'node:stream';
import contentDisposition from 'content-disposition';
import { stringify } from 'csv-stringify';
import type { FastifyReply } from 'fastify';
import type { AppServices } from '../../bootstrap.js';
import { listExportStream, recordedFilter, type ListExported } from '../../domain/exports/list-export.js';
import { runCommand } from '../../commands/run-command.js';
import { newId } from '../../shared/ids.js';
import { neutralised } from '../../shared/formula-cells.js';
import type { MemberView } from '../context.js';
import { contextOf } from '../forms.js';
import { dateText, wallTimeOf } from '../time.js';
import { contextOfList } from './component.js';
import { countMatching, eachBatch } from './query.js';
import { filterAndSort, visibleColumns } from './render.js';
import type { ListParams } from './params.js';
import type { ListContext, ListSpec, Query } from './spec.js';
import type { Where } from './where.js';

function csvCell(value: string | number | null | undefined): string | number {
  if (value === null || value === undefined) return '';
  return typeof value === 'number' ? value : neutralised(value);
}

/** Rows of erased people never reach a file: the erasure ledger names them (a row of no person is kept). */
function withoutErased<Row>(spec: ListSpec<Row>, where: Where): Where {
  const next = where.copy();
  if (spec.person)
    next.when(`NOT EXISTS (SELECT 1 FROM erasure_ledger e WHERE e.tenant_id = $1 AND e.person_id = ${spec.person})`);
  return next;
}

export interface ExportRequest<Row> {
  spec: ListSpec<Row>;
  query: Query;
  params: ListParams<Row>;
  where: Where;
  scope: ListExported['data']['scope'];
}

/** The audit trail's record of a file, appended before its first row is sent (an export not recorded is not sent). */
async function recordExport<Row>(services: AppServices, view: MemberView, o: ExportRequest<Row>, count: number) {
  const id = newId(services.now().getTime());
  const event: ListExported = {
    type: 'list.exported',
    data: {
      list: o.spec.name,
      filter: recordedFilter([
        ...(o.spec.within ? [o.spec.within.record] : []),
        ...filterAndSort(o.spec, o.query, o.params),
      ]),
      scope: o.scope,
      count,
    },
  };
  await runCommand(services.store, contextOf(view)(services.now()), [listExportStream(id)], async (tx) => {
    await tx.append(listExportStream(id), 'no_stream', [event]);
  });
}

/** The file's rows as records, read in keyset batches: memory holds one batch, whatever the list's length. */
const exportedColumns = <Row>(ctx: ListContext, spec: ListSpec<Row>) =>
  visibleColumns(ctx, spec).filter((c) => c.exported !== false);

async function* records<Row>(services: AppServices, ctx: ListContext, o: ExportRequest<Row>, where: Where) {
  const columns = exportedColumns(ctx, o.spec);
  for await (const batch of eachBatch(services.pool, o.spec, where, o.params))
    for (const row of batch) yield columns.map((c) => csvCell(c.text(row, ctx)));
}

/**
 * Streams a list as CSV (UTF-8 with a byte-order mark, so spreadsheets read names right): the headers as the page's,
 * a moment's header naming the workspace's zone, the cells in the page's words.
 */
export async function sendCsv<Row>(
  services: AppServices,
  view: MemberView,
  reply: FastifyReply,
  o: ExportRequest<Row>,
): Promise<FastifyReply> {
  const ctx = contextOfList(view, services.now());
  const where = withoutErased(o.spec, o.where);
  const count = await countMatching(services.pool, o.spec, where);
  await recordExport(services, view, o, count.n);
  const header = exportedColumns(ctx, o.spec).map((c) => (c.zoned ? `${c.label} (${ctx.zone})` : c.label));
  const csv = stringify({ header: true, columns: header, bom: true });
  pipeline(Readable.from(records(services, ctx, o, where)), csv, (error) => {
    if (error) reply.log.warn({ err: error, list: o.spec.name }, 'A list export stopped before its end');
  });
  const today = dateText(wallTimeOf(services.now(), ctx.zone));
  return reply
    .type('text/csv; charset=utf-8')
    .header('content-disposition', contentDisposition(`${o.spec.name}-${view.workspace.slug}-${today}.csv`))
    .header('cache-control', 'no-store')
    .send(csv);
}
