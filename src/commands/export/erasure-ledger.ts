import { applyProjections } from '../../events/apply-projections.js';
import { readStreamWith } from '../../events/event-rows.js';
import type { PersonalDataKeys } from '../../events/personal-data.js';
import type { Projection } from '../../projections/projection.js';
import type { Queryable, Writer } from '../../storage/postgres.js';
import { parseStream, type StreamFamily } from './event-references.js';

/*
 * The erasure ledger (docs/decisions.md, "A restore does not bring an erased person back"): who was erased in which
 * workspace and when, nothing personal. Erasure writes it in its own transaction; exports carry it in their trailer;
 * imports apply it, so an export written before an erasure does not bring the person's keys back.
 */

export interface Erasure {
  person: string;
  erased_at: string;
}

/** Records an erasure (the first time stays). Called by erasure, in its transaction. */
export async function recordErasure(sql: Queryable, tenantId: string, personId: string, at: Date): Promise<void> {
  await sql.query(
    `INSERT INTO erasure_ledger (tenant_id, person_id, erased_at) VALUES ($1, $2, $3)
     ON CONFLICT (tenant_id, person_id) DO UPDATE SET erased_at = least(erasure_ledger.erased_at, EXCLUDED.erased_at)`,
    [tenantId, personId, at],
  );
}

/** The workspace's erasures, oldest first, as an export's trailer carries them. */
export async function erasuresOf(sql: Queryable, tenantId: string): Promise<Erasure[]> {
  const result = await sql.query<{ person_id: string; erased_at: Date }>(
    'SELECT person_id, erased_at FROM erasure_ledger WHERE tenant_id = $1 ORDER BY erased_at, person_id',
    [tenantId],
  );
  return result.rows.map((r) => ({ person: r.person_id, erased_at: r.erased_at.toISOString() }));
}

const READ_MODEL_ROWS: Record<Exclude<StreamFamily, 'webhook-endpoint' | 'list-export'>, string[]> = {
  lead: ['DELETE FROM leads WHERE tenant_id = $1 AND id = $2'],
  application: ['DELETE FROM applications WHERE tenant_id = $1 AND id = $2'],
  document: ['DELETE FROM documents WHERE tenant_id = $1 AND id = $2'],
  task: [
    'DELETE FROM tasks WHERE tenant_id = $1 AND id = $2',
    'DELETE FROM task_timers WHERE tenant_id = $1 AND task_id = $2',
  ],
  invoice: ['DELETE FROM invoices WHERE tenant_id = $1 AND id = $2'],
};

/**
 * Applies the ledger at the end of an import: the erasures the files carried join this database's own for the
 * workspace; every stream filed under an erased person that the import gave a live key loses it (as erasure deletes
 * it), and its read-model rows are projected again from its events as they read without the key.
 * Returns the streams erased.
 */
export async function applyErasures(
  sql: Writer,
  projections: readonly Projection[],
  tenantId: string,
  carried: readonly Erasure[],
  keys: PersonalDataKeys | undefined,
): Promise<number> {
  for (const erasure of carried) await recordErasure(sql, tenantId, erasure.person, new Date(erasure.erased_at));
  const erased = await sql.query<{ stream_id: string }>(
    `UPDATE personal_data_keys k SET wrapped_key = NULL, erased_at = coalesce(k.erased_at, l.erased_at)
       FROM erasure_ledger l
      WHERE l.tenant_id = $1 AND k.tenant_id = $1 AND k.person_id = l.person_id AND k.wrapped_key IS NOT NULL
      RETURNING k.stream_id`,
    [tenantId],
  );
  for (const { stream_id: stream } of erased.rows) {
    const parsed = parseStream(stream);
    if (parsed === null || parsed.family === 'webhook-endpoint' || parsed.family === 'list-export') continue;
    for (const statement of READ_MODEL_ROWS[parsed.family]) await sql.query(statement, [tenantId, parsed.id]);
    await applyProjections(sql, projections, await readStreamWith(sql, stream, keys));
  }
  await sql.query(
    `UPDATE leads SET phone = NULL, email = NULL
      WHERE tenant_id = $1 AND id IN (SELECT person_id FROM erasure_ledger WHERE tenant_id = $1)`,
    [tenantId],
  );
  return erased.rows.length;
}
