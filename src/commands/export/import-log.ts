import type pg from 'pg';
import { Replay, type ProjectedBatch } from '../../events/apply-projections.js';
import { isSealed, openEvent, type PersonalDataKeys } from '../../events/personal-data.js';
import { anchorText } from '../../events/verify-chain.js';
import type { Projection } from '../../projections/projection.js';
import { bindEndpointSecrets } from '../../projections/webhook-endpoints.js';
import { ENDPOINT_EVENTS } from '../../domain/webhooks/endpoint.js';
import { PurposeBox } from '../../shared/secret-box.js';
import type { ExportHeader } from '../../schemas/export.js';
import { countImportedLeads } from '../../workspaces/quota.js';
import type { Queryable } from '../../storage/postgres.js';
import { GrowingTables } from '../../storage/growing-tables.js';
import { inTransaction } from '../../storage/transaction.js';
import { applyErasures } from './erasure-ledger.js';
import { ExportLineChecker, ImportRefusedError, type CheckedEvent } from './line-checker.js';

/** One file of an export, as lines without their line breaks. */
export interface ExportFile {
  name: string;
  lines: AsyncIterable<string>;
}

export interface ImportResult {
  workspace: { id: string; slug: string };
  events: number;
  /** The workspace head over the imported events and the source position it was taken at, as the trailer printed it. */
  head: string;
  anchor: string;
}

export interface ImportOptions {
  /**
   * The service's webhook-secret box: a sealed secret must open for its own endpoint, and those sealed before
   * binding are bound at import. Without it only copies within the file are refused.
   */
  webhookSecrets?: PurposeBox;
  /** Called after each batch of events is inserted and projected, with the number of events imported so far. */
  onProgress?: (events: number) => void;
  /** Prepare each statement once (see TransactionOptions). Only on connections straight to PostgreSQL. */
  namedStatements?: boolean;
  /** Events a folded row is held for after its last change (REPLAY_WINDOW); tests make it small. */
  window?: number;
}

/** Events inserted and projected per statement. */
export const IMPORT_BATCH = 500;

/**
 * Replays an export (one file, or a file and the exports that continue it) into this database in one transaction:
 * every line is checked (src/commands/export/line-checker.ts) before COMMIT, the workspace is created as the header
 * describes it, the events keep their ids, revisions, times and hashes (their global positions are this database's
 * own, in the same order), and the read models are projected from them as the service projects appends. Any refusal
 * or failure rolls everything back. Refused when the workspace already has events here.
 */
export async function importExport(
  pool: pg.Pool,
  projections: readonly Projection[],
  files: readonly ExportFile[],
  /** Opens the personal values the export carries keys for (the service's own; same SECRET_ENCRYPTION_KEY). */
  keys: PersonalDataKeys | undefined,
  options: ImportOptions = {},
): Promise<ImportResult> {
  return inTransaction(
    pool,
    async (sql) => {
      const checker = new ExportLineChecker();
      const growing = new GrowingTables(['events', 'personal_data_keys', ...projections.flatMap((p) => p.tables)]);
      const secrets = new EndpointSecrets(options.webhookSecrets);
      let workspace: ExportHeader['workspace'] | null = null;
      let batch: CheckedEvent[] = [];
      const replay = new Replay<CheckedEvent>(projections, options.window);
      // The batch whose projections' writes may still be unanswered: they are written while the next lines are checked.
      let projecting: ProjectedBatch<CheckedEvent> | undefined;
      const settle = async () => {
        const projected = projecting;
        projecting = undefined;
        if (projected) await settleImported(projected);
      };
      const flush = async () => {
        if (batch.length === 0) return;
        await settle();
        await growing.written(sql, checker.events - batch.length);
        await refuseForeignStreams(sql, batch);
        await insertEvents(sql, batch, checker, keys);
        // Projections see the events as said: personal values opened with the keys the export carried.
        projecting = await replay.project(
          sql,
          batch.map((event) => openImported(event, keys)),
        );
        options.onProgress?.(checker.events);
        batch = [];
      };
      try {
        for (const file of files) {
          checker.startFile(file.name);
          for await (const text of file.lines) {
            const checked = checker.check(text);
            if (checked.kind === 'header') {
              // A continuation carries the workspace as it was at its export: the latest one is the workspace now.
              if (workspace === null) await createWorkspace(sql, checked.header.workspace, file.name);
              else await updateWorkspace(sql, checked.header.workspace, file.name);
              workspace = checked.header.workspace;
            } else if (checked.kind === 'event') {
              secrets.check(checked.event);
              batch.push(checked.event);
              if (batch.length >= IMPORT_BATCH) await flush();
            }
          }
          checker.endFile();
        }
        await flush();
        await settle();
        projecting = replay.finish(sql);
        await settle();
      } catch (error) {
        // A refusal of a later line, or a failure it caused, comes after the batch still being written: that one's first.
        await settle();
        throw error;
      }
      if (workspace === null) throw new ImportRefusedError('the import', 0, 'no file was given');
      checker.finish();
      await settleAfterImport(sql, workspace.id, checker.events);
      // An erasure this database or a later file knows of stays: the older lines' keys do not bring the person back.
      await applyErasures(sql, projections, workspace.id, checker.erasures, keys);
      if (options.webhookSecrets) await bindEndpointSecrets(sql, options.webhookSecrets, workspace.id);
      const head = checker.head();
      return {
        workspace: { id: workspace.id, slug: workspace.slug },
        events: checker.events,
        head,
        anchor: anchorText(head, checker.lastPosition),
      };
    },
    { namedStatements: options.namedStatements },
  );
}

/** Creates the workspace (or takes over an existing one of the same id with no events), refusing any other case. */
async function createWorkspace(sql: Queryable, ws: ExportHeader['workspace'], file: string): Promise<void> {
  // Two imports of one workspace at once: the second waits here, then finds the first one's events.
  await sql.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`workspace-import:${ws.id}`]);
  await refuseSlugClash(sql, ws, file);
  const used = await sql.query('SELECT 1 FROM events WHERE tenant_id = $1 LIMIT 1', [ws.id]);
  if (used.rows.length > 0)
    throw new ImportRefusedError(
      file,
      1,
      `workspace ${ws.slug} (${ws.id}) already has events in this database: import only into a workspace with none`,
    );
  await sql.query(
    `INSERT INTO workspaces (id, slug, name, plan, status, settings) VALUES ($1, $2, $3, $4, $5, $6)
     ON CONFLICT (id) DO UPDATE SET slug = $2, name = $3, plan = $4, status = $5, settings = $6,
       revision = workspaces.revision + 1, updated_at = now()`,
    [ws.id, ws.slug, ws.name, ws.plan, ws.status, JSON.stringify(ws.settings)],
  );
}

/** Takes the definition of a continuation's header (the id is the same: the checker made sure). */
async function updateWorkspace(sql: Queryable, ws: ExportHeader['workspace'], file: string): Promise<void> {
  await refuseSlugClash(sql, ws, file);
  await sql.query(
    `UPDATE workspaces SET slug = $2, name = $3, plan = $4, status = $5, settings = $6, revision = revision + 1,
       updated_at = now() WHERE id = $1`,
    [ws.id, ws.slug, ws.name, ws.plan, ws.status, JSON.stringify(ws.settings)],
  );
}

async function refuseSlugClash(sql: Queryable, ws: ExportHeader['workspace'], file: string): Promise<void> {
  const clash = await sql.query<{ id: string }>('SELECT id FROM workspaces WHERE slug = $1 AND id <> $2', [
    ws.slug,
    ws.id,
  ]);
  if (clash.rows.length > 0)
    throw new ImportRefusedError(file, 1, `another workspace (${clash.rows[0]!.id}) has the slug ${ws.slug} here`);
}

/** Inserts checked events in their order, so the positions they get here keep the source's global order. */
async function insertEvents(
  sql: Queryable,
  events: readonly CheckedEvent[],
  checker: ExportLineChecker,
  keys: PersonalDataKeys | undefined,
) {
  try {
    await sql.query(
      `INSERT INTO events (id, stream_id, revision, type, tenant_id, sandbox, data, metadata, created_at, hash)
       SELECT e.id, e.stream_id, e.revision, e.type, e.tenant_id, e.sandbox, e.data::jsonb, e.metadata::jsonb,
              e.created_at, e.hash
         FROM unnest($1::uuid[], $2::text[], $3::integer[], $4::text[], $5::uuid[], $6::boolean[], $7::text[],
                     $8::text[], $9::timestamptz[], $10::bytea[])
              WITH ORDINALITY AS e(id, stream_id, revision, type, tenant_id, sandbox, data, metadata, created_at, hash, ord)
        ORDER BY e.ord`,
      [
        events.map((e) => e.id),
        events.map((e) => e.streamId),
        events.map((e) => e.revision),
        events.map((e) => e.type),
        events.map((e) => e.tenantId),
        events.map((e) => e.sandbox),
        events.map((e) => JSON.stringify(e.data)),
        events.map((e) => JSON.stringify(e.metadata)),
        events.map((e) => e.createdAt),
        events.map((e) => e.hash),
      ],
    );
    await insertKeys(sql, events, keys);
  } catch (error) {
    const code = (error as { code?: string }).code;
    // 22P05: a string PostgreSQL cannot store (NUL); no event the store wrote holds one.
    if (code === '22P05')
      throw new ImportRefusedError('the import', 0, 'an event holds a value PostgreSQL cannot store');
    if (code === '23505')
      throw new ImportRefusedError(
        'the import',
        0,
        `an event of this export (near event ${checker.events}) already exists in this database under another workspace`,
      );
    throw error;
  }
}

/**
 * What the log alone does not restore: nothing imported is delivered again as a webhook (each endpoint counts as
 * created after the imported events), the case and invoice numbers continue after the highest imported one, and
 * the month's live-lead quota counts the imported leads. Refused if another writer added events meanwhile.
 */
async function settleAfterImport(sql: Queryable, tenantId: string, imported: number): Promise<void> {
  const count = await sql.query<{ n: string }>('SELECT count(*)::text AS n FROM events WHERE tenant_id = $1', [
    tenantId,
  ]);
  if (Number(count.rows[0]!.n) !== imported)
    throw new ImportRefusedError('the import', 0, 'another writer appended events to this workspace meanwhile');
  await sql.query(
    `UPDATE webhook_endpoints SET created_tx_id = pg_current_xact_id(),
       created_position = (SELECT max(position) FROM events WHERE tenant_id = $1 AND tx_id = pg_current_xact_id())
     WHERE tenant_id = $1`,
    [tenantId],
  );
  await sql.query(
    `INSERT INTO application_numbers (tenant_id, sandbox, last_number)
     SELECT tenant_id, sandbox, max(number) FROM applications WHERE tenant_id = $1 GROUP BY tenant_id, sandbox
     ON CONFLICT (tenant_id, sandbox) DO UPDATE SET last_number = GREATEST(application_numbers.last_number, EXCLUDED.last_number)`,
    [tenantId],
  );
  await sql.query(
    `INSERT INTO invoice_numbers (tenant_id, sandbox, last_number)
     SELECT tenant_id, sandbox, max(substring(number FROM '\\d+$')::integer) FROM invoices WHERE tenant_id = $1
      GROUP BY tenant_id, sandbox
     ON CONFLICT (tenant_id, sandbox) DO UPDATE SET last_number = GREATEST(invoice_numbers.last_number, EXCLUDED.last_number)`,
    [tenantId],
  );
  await countImportedLeads(sql, tenantId);
}

/**
 * The data keys of the imported streams (crypto-shredding), as the export carried them: wrapped keys open only where
 * SECRET_ENCRYPTION_KEY is the source's; an erasure travels as its tombstone and is never undone by an older line.
 */
async function insertKeys(
  sql: Queryable,
  events: readonly CheckedEvent[],
  keys: PersonalDataKeys | undefined,
): Promise<void> {
  const byStream = new Map<string, { tenant: string; key: NonNullable<CheckedEvent['personalKey']>; at: Date }>();
  for (const e of events)
    if (e.personalKey) byStream.set(e.streamId, { tenant: e.tenantId, key: e.personalKey, at: e.createdAt });
  if (byStream.size === 0) return;
  const rows = [...byStream.entries()];
  // A stream's key rides on each of its event lines, so most batches meet rows written by an earlier one: a row that
  // would be written again as it is is left out (read, not rewritten: the import wrote each key row twice before).
  await sql.query(
    `INSERT INTO personal_data_keys (stream_id, tenant_id, person_id, wrapped_key, created_at, erased_at)
     SELECT r.* FROM unnest($1::text[], $2::uuid[], $3::uuid[], $4::text[], $5::timestamptz[], $6::timestamptz[])
            AS r(stream_id, tenant_id, person_id, wrapped_key, created_at, erased_at)
      WHERE NOT EXISTS (
        SELECT 1 FROM personal_data_keys k
         WHERE k.stream_id = r.stream_id AND k.tenant_id = r.tenant_id
           AND k.wrapped_key IS NOT DISTINCT FROM (CASE WHEN k.erased_at IS NULL THEN r.wrapped_key END)
           AND k.erased_at IS NOT DISTINCT FROM coalesce(k.erased_at, r.erased_at))
     ON CONFLICT (stream_id) DO UPDATE
        SET wrapped_key = CASE WHEN personal_data_keys.erased_at IS NULL THEN EXCLUDED.wrapped_key END,
            erased_at = coalesce(personal_data_keys.erased_at, EXCLUDED.erased_at)
      WHERE personal_data_keys.tenant_id = EXCLUDED.tenant_id`,
    [
      rows.map(([stream]) => stream),
      rows.map(([, r]) => r.tenant),
      rows.map(([, r]) => r.key.person),
      // Exports written before wrapped keys may carry a derived format (`s1:`/`s2:`): stored in the one format.
      rows.map(([, r]) => (r.key.wrapped === null || !keys ? r.key.wrapped : keys.inOneFormat(r.key.wrapped))),
      rows.map(([, r]) => r.at),
      rows.map(([, r]) => r.key.erased_at),
    ],
  );
}

/** An imported event as it was said (see toOpenedEvent): opened with its stream's key, erased without one. */
function openImported(event: CheckedEvent, keys: PersonalDataKeys | undefined): CheckedEvent {
  if (!isSealed(event.data)) return event;
  const wrapped = event.personalKey?.wrapped ?? null;
  if (wrapped !== null && !keys) throw new Error('Sealed personal data imported without the data keys');
  const key = wrapped === null || !keys ? null : keys.keyOf(keys.inOneFormat(wrapped));
  return { ...event, data: openEvent(event, event.data, key) };
}

const refusedAt = (event: CheckedEvent, reason: string) =>
  new ImportRefusedError(event.source.file, event.source.line, `event ${event.id}: ${reason}`);

/**
 * The workspace has no events here (createWorkspace made sure), so a stream of this import that this database
 * already holds, or holds a data key for, is another workspace's: refused at its first line.
 */
async function refuseForeignStreams(sql: Queryable, events: readonly CheckedEvent[]): Promise<void> {
  const tenantId = events[0]!.tenantId;
  const streams = [...new Set(events.map((e) => e.streamId))];
  const taken = await sql.query<{ stream_id: string }>(
    `SELECT stream_id FROM events WHERE stream_id = ANY($1::text[]) AND tenant_id <> $2
     UNION ALL SELECT stream_id FROM personal_data_keys WHERE stream_id = ANY($1::text[]) AND tenant_id <> $2
     LIMIT 1`,
    [streams, tenantId],
  );
  const stream = taken.rows[0]?.stream_id;
  if (stream === undefined) return;
  const first = events.find((e) => e.streamId === stream)!;
  throw refusedAt(first, `its stream ${stream} belongs to another workspace in this database`);
}

/**
 * Waits for a projected batch's writes; a read-model row of the same id elsewhere (a unique violation) refuses the
 * line of the event that would have written it.
 */
async function settleImported(projected: ProjectedBatch<CheckedEvent>): Promise<void> {
  try {
    await projected.settled();
  } catch (error) {
    const event = projected.failedEvent();
    if ((error as { code?: string }).code !== '23505' || event === undefined) throw error;
    throw refusedAt(event, 'a row it would write already exists in this database (another workspace’s id)');
  }
}

/**
 * The webhook secrets an import carries: each sealed for its own endpoint (`v3:`), or sealed before binding and then
 * on one endpoint only; a secret moved from one endpoint onto another is refused at its line.
 */
class EndpointSecrets {
  private readonly owners = new Map<string, string>();

  private readonly box: PurposeBox | undefined;
  constructor(box: PurposeBox | undefined) {
    this.box = box;
  }

  check(event: CheckedEvent): void {
    if (event.type !== ENDPOINT_EVENTS.created && event.type !== ENDPOINT_EVENTS.secretRotated) return;
    const endpoint = String(event.data.endpoint_id);
    for (const field of ['sealed_secret', 'previous_sealed_secret'] as const) {
      const sealed = event.data[field];
      if (sealed === undefined) continue;
      if (typeof sealed !== 'string') throw refusedAt(event, `its ${field} is not a sealed secret`);
      const owner = this.owners.get(sealed);
      if (owner !== undefined && owner !== endpoint)
        throw refusedAt(event, `its ${field} is the secret of endpoint ${owner}, not of ${endpoint}`);
      this.owners.set(sealed, endpoint);
      if (this.box && !this.opens(endpoint, sealed))
        throw refusedAt(event, `its ${field} is not sealed for endpoint ${endpoint} with this SECRET_ENCRYPTION_KEY`);
    }
  }

  private opens(endpoint: string, sealed: string): boolean {
    try {
      this.box!.openFor(endpoint, sealed);
      return true;
    } catch {
      return false;
    }
  }
}
