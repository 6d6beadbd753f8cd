import { Type, type Static, type TObject, type TProperties, type TString } from 'typebox';
import type { AppServices } from '../../bootstrap.js';
import type { TypedApp } from '../../http/typed-app.js';
import { allow, ConsoleRefusal, type MemberView } from '../context.js';
import { viewOf } from '../routes.js';
import { Csrf, listOf, Many, SlugParams } from '../schemas.js';
import { contextOfList, readQuery } from './component.js';
import { sendCsv } from './export.js';
import { LIST_QUERY } from './params.js';
import { eachBatch } from './query.js';
import type { ListSpec, Query } from './spec.js';

/** A list route's query string: its filters (each optional text) and the list's own parts (sort, size, pages). */
export function listQuerySchema<E extends TProperties = Record<never, never>>(
  spec: Pick<ListSpec<unknown>, 'filterNames'>,
  extra?: E,
) {
  const filters = Object.fromEntries(spec.filterNames.map((n) => [n, Type.Optional(Type.String({ maxLength: 200 }))]));
  return Type.Object({ ...filters, ...LIST_QUERY, ...(extra ?? ({} as E)) });
}

/** A query string as the list reads it: each name's first value. */
export function queryOf(text: string): Query {
  const query: Query = {};
  for (const [k, v] of new URLSearchParams(text)) if (!(k in query)) query[k] = v;
  return query;
}

/** A list's filter and sort from a query string, refused in words when the list cannot read it. */
function filteredOrRefused<Row>(spec: ListSpec<Row>, view: MemberView, query: Query, now: Date) {
  allow(view, spec.view);
  const read = readQuery(spec, contextOfList(view, now), query);
  const wrong = Object.values(read.errors);
  if (wrong.length) throw new ConsoleRefusal(400, `This list’s filter cannot be read: ${wrong.join(' ')}`);
  return read;
}

/**
 * The ids of every row a list's filter query string matches, in the list's order, tenant-scoped (the workspace in
 * view): what "all N matching" of a selection means. Read in keyset batches; at most `limit` ids.
 */
export async function matchingIdsOf<Row>(
  services: Pick<AppServices, 'pool' | 'now'>,
  view: MemberView,
  spec: ListSpec<Row>,
  queryString: string,
  limit = 100_000,
): Promise<string[]> {
  const { params, where } = filteredOrRefused(spec, view, queryOf(queryString), services.now());
  const ids: string[] = [];
  for await (const batch of eachBatch(services.pool, spec, where, params, 1000)) {
    for (const row of batch) {
      if (ids.length >= limit) return ids;
      ids.push(spec.rowId(row));
    }
  }
  return ids;
}

const SelectionBody = Type.Object({
  _csrf: Csrf,
  ids: Many(Type.String({ maxLength: 100 }), 200),
  scope: Type.Optional(Type.String({ maxLength: 10 })),
  query: Type.Optional(Type.String({ maxLength: 4000 })),
  action: Type.Optional(Type.String({ maxLength: 20 })),
});

/** A list's CSV routes: the filtered list (a link), and a selection (the list's selection form, or the bulk pages). */
export function registerListExport<Row>(app: TypedApp, services: AppServices, spec: ListSpec<Row>): void {
  registerRecordListExport(app, services, {
    path: spec.name,
    params: SlugParams,
    filterNames: spec.filterNames,
    specOf: async () => spec,
  });
}

/**
 * The CSV routes of a list whose spec depends on the path (a record's own list, `within` it): `specOf` finds the
 * record in the member's workspace (a 404 page when it is not there) and gives its list.
 */
export function registerRecordListExport<Row, P extends TObject<{ slug: TString }>>(
  app: TypedApp,
  services: AppServices,
  o: {
    path: string;
    params: P;
    filterNames: readonly string[];
    specOf(view: MemberView, params: Static<P>): Promise<ListSpec<Row>>;
  },
): void {
  const exporting = { console: { operation: 'lists.export' } } as const;
  app.get(
    `/w/:slug/${o.path}/export.csv`,
    { schema: { params: o.params, querystring: listQuerySchema(o) }, config: exporting },
    async (request, reply) => {
      const view = viewOf(request);
      const spec = await o.specOf(view, request.params as Static<P>);
      const query = request.query as Query;
      const { params, where } = filteredOrRefused(spec, view, query, services.now());
      return sendCsv(services, view, reply, { spec, query, params, where, scope: 'filter' });
    },
  );
  app.post(
    `/w/:slug/${o.path}/export`,
    { schema: { params: o.params, body: SelectionBody }, config: exporting },
    async (request, reply) => {
      const view = viewOf(request);
      const spec = await o.specOf(view, request.params as Static<P>);
      const query = queryOf(request.body.query ?? '');
      const { params, where } = filteredOrRefused(spec, view, query, services.now());
      const scope = request.body.scope === 'matching' ? 'matching' : 'ids';
      if (scope === 'ids') {
        const ids = listOf(request.body.ids);
        if (ids.length === 0)
          throw new ConsoleRefusal(400, 'Nothing was exported: tick at least one row, or choose all matching.');
        if (spec.id.type === 'uuid' && !ids.every((id) => UUID.test(id)))
          throw new ConsoleRefusal(400, 'Nothing was exported: a ticked row is not one of this list.');
        where.add((n) => `(${spec.id.sql}) = ANY(${n}::${spec.id.type}[])`, ids);
      }
      return sendCsv(services, view, reply, { spec, query, params, where, scope });
    },
  );
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * The lists' one script: "Select this page" ticks (or clears) the page's boxes in place instead of loading the page
 * again with them ticked, which is what it does without script.
 */
export const LIST_SCRIPT = `document.querySelectorAll('a.select-page').forEach(function (link) {
  var form = link.closest('form');
  if (!form) return;
  link.addEventListener('click', function (event) {
    event.preventDefault();
    var boxes = Array.prototype.slice.call(form.querySelectorAll('input[name="ids"]'));
    var all = boxes.every(function (box) { return box.checked; });
    boxes.forEach(function (box) { box.checked = !all; });
    link.textContent = all ? 'Select this page' : 'Clear the selection';
  });
});
`;

export function registerListScript(app: TypedApp): void {
  app.get('/assets/lists.js', { config: { console: 'open' } }, async (_request, reply) =>
    reply.type('text/javascript; charset=utf-8').header('cache-control', 'public, max-age=3600').send(LIST_SCRIPT),
  );
}
