import { Type } from 'typebox';
import type { AppServices } from '../../bootstrap.js';
import { Refusal } from '../../domain/refusal.js';
import type { StoreTransaction } from '../../events/event-store.js';
import { can } from '../../identity/permissions.js';
import type { StoredAnswer } from '../../intake/idempotency.js';
import { importedRow, recordImportedRow, rowBodies, rowBody } from '../../intake/import/store.js';
import { defineJobKind, type JobBatchWork, type JobItemWork, type JobKind, type TypedJob } from '../../jobs/kinds.js';
import { newId } from '../../shared/ids.js';
import { findWorkspace } from '../../workspaces/repository.js';
import type { Workspace } from '../../workspaces/workspace.js';
import { refusalReason } from '../bulk/refusal-reason.js';
import { staffContext } from '../run-command.js';
import { captureLead, type CaptureRecord, type CaptureChannel, type CaptureInput } from './capture-lead.js';
import { importInWaves } from './import-waves.js';
import { acceptedSubmission } from './submit-lead.js';

/** The job kind of a CSV import: one item per row that passed the preview's checks. */
export const IMPORT_KIND = 'leads.import';

export const ImportParams = Type.Object(
  { import_id: Type.String({ format: 'uuid' }), file_sha256: Type.String({ pattern: '^[0-9a-f]{64}$' }) },
  { additionalProperties: false },
);
const RowItem = Type.Object({ row: Type.Integer({ minimum: 1 }) }, { additionalProperties: false });

/** An import's leads come through the console as a member's, from the source `import`. */
const IMPORT_CHANNEL: CaptureChannel = { kind: 'secret', mode: 'live', source_key: 'import' };

type ImportServices = Pick<AppServices, 'pool' | 'store' | 'now'>;
type ImportJob = TypedJob<{ import_id: string; file_sha256: string }>;

/** The workspace as it is now, with the job's member still allowed to import, or a refusal of the row. */
async function importerNow(services: ImportServices, job: ImportJob): Promise<Workspace> {
  const workspace = await findWorkspace(services.pool, job.tenantId);
  if (!workspace) throw new Refusal('not_found', 'not_found', 'The workspace is gone');
  const actor = job.actor;
  const member =
    actor.type === 'user' ? workspace.settings.users.find((u) => u.id === actor.user_id && u.active) : undefined;
  if (!member || !can(member.role, 'leads.import'))
    throw new Refusal('conflict', 'not_allowed', 'Its member’s role no longer allows importing leads');
  return workspace;
}

/** A row's item settled by another worker (its lease lapsed) while this one captured it: the capture rolls back. */
class SettledElsewhere extends Error {
  constructor(seq: number) {
    super(`Import item ${seq} was settled by another worker; this capture was rolled back`);
    this.name = 'SettledElsewhere';
  }
}

/**
 * The capture's record of one row, in its transaction (under the row's lock, so two workers take turns): a row this
 * same file made a lead of before is replayed and its item skipped with that lead; after the capture, the item is
 * claimed (after the events: a row lock taken earlier would keep the lead's stream from being locked), the row → lead
 * record written and the item settled, all committed with the lead's events.
 */
function rowRecord(job: ImportJob, item: JobItemWork<{ row: number }>, now: () => Date): CaptureRecord {
  const { tenantId } = job;
  const sha256 = job.params.file_sha256;
  const rowNo = item.input.row;
  return {
    locks: [`lock:lead-import:${tenantId}:${sha256}:${rowNo}`],
    async earlier(tx: StoreTransaction) {
      const before = await importedRow(tx.sql, tenantId, sha256, rowNo);
      if (!before) return null;
      if (await item.claim(tx.sql))
        await item.settle(tx.sql, {
          outcome: 'skipped',
          reason: 'Imported before from this same file: not imported again.',
          result: before.leadId,
        });
      return { requestHash: '', status: 200, body: { id: before.leadId, duplicate: before.duplicate } };
    },
    async save(tx: StoreTransaction, answer: StoredAnswer) {
      if (!(await item.claim(tx.sql))) throw new SettledElsewhere(item.seq);
      const leadId = String(answer.body.id);
      const duplicate = answer.status === 200;
      await recordImportedRow(tx.sql, {
        tenantId,
        sha256,
        rowNo,
        leadId,
        duplicate,
        importId: job.params.import_id,
        now: now(),
      });
      await item.settle(tx.sql, {
        outcome: 'done',
        result: leadId,
        ...(duplicate ? { reason: 'This person already had a lead: the row was added to it as an enquiry.' } : {}),
      });
    },
  };
}

/** The capture of one row as the member, from `import`, with its row → lead record; a refusal of its row as thrown. */
function rowCapture(
  services: ImportServices,
  job: ImportJob,
  workspace: Workspace,
  item: JobItemWork<{ row: number }>,
  body: Record<string, unknown> | undefined,
): CaptureInput {
  if (!body)
    throw new Refusal('not_found', 'row_gone', 'The uploaded file’s rows are no longer kept: upload the file again');
  // The body passed POST /v1/leads' schema when the rows were checked (it has not changed since); the capture's own
  // rules run again now, against the workspace's settings of today.
  const { submission } = acceptedSubmission(
    { body, schemaProblems: {}, workspace, keyKind: IMPORT_CHANNEL.kind },
    services.now(),
  );
  return {
    workspace,
    key: IMPORT_CHANNEL,
    submission,
    idempotency: null,
    captcha: null,
    context: (at) => staffContext(job.tenantId, false, job.actor, at),
    now: services.now,
    record: rowRecord(job, item, services.now),
  };
}

/** One row of an upload made a lead (or an enquiry) through the capture command, as the member, from `import`. */
async function importRow(services: ImportServices, job: ImportJob, item: JobItemWork<{ row: number }>) {
  const workspace = await importerNow(services, job);
  const body = await rowBody(services.pool, job.tenantId, job.params.import_id, item.input.row);
  await captureLead(services, rowCapture(services, job, workspace, item, body));
}

/**
 * Several rows in few transactions: the member's role asked once, the rows' bodies read in one statement, then the
 * rows captured in waves (import-waves.ts) of rows that share no person and no existing lead, one transaction each.
 */
async function importRows(services: ImportServices, job: ImportJob, batch: JobBatchWork<{ row: number }>) {
  const workspace = await importerNow(services, job);
  const rows = batch.items.map((item) => item.input.row);
  const bodies = await rowBodies(services.pool, job.tenantId, job.params.import_id, rows);
  // Leads made in one transaction share their creation time: ids rising in row order keep "the earliest created"
  // lead of a person the one its first row made, as when rows are captured one at a time.
  const leadIds = batch.items.map(() => newId()).sort();
  const captures = batch.items.map((item, i) => {
    try {
      const capture = rowCapture(services, job, workspace, item, bodies.get(item.input.row));
      return { item, capture: { ...capture, leadId: leadIds[i]! } };
    } catch (error) {
      const reason = refusalReason(error);
      if (reason === undefined) throw error;
      return { item, refused: reason };
    }
  });
  await importInWaves(
    services,
    () => staffContext(job.tenantId, false, job.actor, services.now()),
    job.tenantId,
    captures,
  );
}

export function leadImportKinds(services: ImportServices): JobKind<unknown, unknown>[] {
  return [
    defineJobKind({
      kind: IMPORT_KIND,
      params: ImportParams,
      input: RowItem,
      run: (job, item) => importRow(services, job, item),
      runBatch: (job, batch) => importRows(services, job, batch),
      refusalReason,
    }),
  ];
}
