import type { Lead } from '../domain/leads/lead.js';
import type { Queryable } from '../storage/postgres.js';
import { OPENED_COLUMNS, toOpenedEvent, WITH_KEYS, type KeyedEventRow } from '../events/event-rows.js';
import { personalDataKeysOf } from '../events/personal-data.js';
import type pg from 'pg';
import { INTENT_EXPIRY_MS, inFlightFloorMsSql, intentPrefix } from '../leads/write-intents.js';
import { inTransaction } from '../storage/transaction.js';

/** The public Lead, from this workspace and mode only. */
export async function findLead(
  sql: Queryable,
  tenantId: string,
  sandbox: boolean,
  leadId: string,
): Promise<Lead | undefined> {
  return (await findLeadRow(sql, tenantId, sandbox, leadId))?.lead;
}

/** The lead with the last revision of its stream, for a command that appends after it. */
export async function findLeadRow(
  sql: Queryable,
  tenantId: string,
  sandbox: boolean,
  leadId: string,
): Promise<{ lead: Lead; revision: number } | undefined> {
  const result = await sql.query<{ body: Lead; revision: number }>(
    'SELECT body, revision FROM leads WHERE id = $1 AND tenant_id = $2 AND sandbox = $3',
    [leadId, tenantId, sandbox],
  );
  const row = result.rows[0];
  return row ? { lead: row.body, revision: row.revision } : undefined;
}

export interface CaptureLookup {
  /** The lead the phone or email already belongs to (the earliest created when they point at two), and what matched. */
  duplicate?: { lead: Lead; matchedOn: ('phone' | 'email')[] };
}

/** What a capture reads before it decides, in one statement: the person's lead, if any. */
export async function captureLookup(
  sql: Queryable,
  tenantId: string,
  sandbox: boolean,
  phone: string | null,
  email: string | null,
): Promise<CaptureLookup> {
  // One lookup per unique index (an OR across both would not use them), the earliest-created lead first.
  const result = await sql.query<{ body: Lead; phone: string | null; email: string | null }>(
    `SELECT body, phone, email, created_at, id FROM leads WHERE tenant_id = $1 AND sandbox = $2 AND phone = $3
     UNION ALL
     SELECT body, phone, email, created_at, id FROM leads WHERE tenant_id = $1 AND sandbox = $2 AND email = $4
     ORDER BY created_at, id LIMIT 1`,
    [tenantId, sandbox, phone, email],
  );
  const row = result.rows[0];
  if (!row) return {};
  const matchedOn: ('phone' | 'email')[] = [];
  if (phone && row.phone === phone) matchedOn.push('phone');
  if (email && row.email === email) matchedOn.push('email');
  return { duplicate: { lead: row.body, matchedOn } };
}

export interface ListOptions {
  updatedSince?: Date;
  after?: { updatedAt: Date; id: string };
  limit: number;
  now: Date;
}

/** A page of leads as the stored Lead JSON texts joined with commas, and where the next page starts, if one follows. */
export interface LeadPage {
  json: string;
  next: { updatedAt: Date; id: string } | null;
}

/**
 * A page of up to `limit` leads ascending by (updated_at, id), built by PostgreSQL as one text: Node then parses one
 * row instead of one per lead (and no timestamps), the larger part of a page's cost in Node.
 *
 * Rows are held back unless they are older than every lead write of the workspace and mode still in flight and no
 * newer than `o.now` (read before the query is sent), so a page never shows a change that a write registered
 * earlier, or one not registered yet, could land behind. For that the writes in flight are read first, in a
 * statement of their own, and the rows after, in the next statement, whose snapshot is newer: a write that
 * commits in between is then either seen as registered or seen as committed, never missed both ways (as it could
 * be if one statement read both). The floor is handed over in a setting local to the transaction.
 */
export async function listLeads(pool: pg.Pool, tenantId: string, sandbox: boolean, o: ListOptions): Promise<LeadPage> {
  // One transaction, so that the floor the first statement sets is there for the second.
  const { page } = await inTransaction(pool, async (tx) => {
    await tx.query(
      `SELECT set_config('vcrm.list_floor', coalesce(${inFlightFloorMsSql('$1::text', '$2::bigint')}::text, ''), true)`,
      [intentPrefix(tenantId, sandbox), o.now.getTime() - INTENT_EXPIRY_MS],
    );
    // One row more than the page tells whether another follows; the stored body is exactly the public Lead (the
    // projection writes nothing else), so it is passed on as it is. The page's last row gives the next cursor.
    // Unnamed, so that it is planned for its own values each time (a generic plan would not use `updated_since` as an
    // index bound).
    const page = tx.query<{
      json: string | null;
      fetched: number;
      last_ms: string | null;
      last_id: string | null;
    }>(
      `SELECT string_agg(p.body::text, ',' ORDER BY p.n) FILTER (WHERE p.n <= $8) AS json,
              count(*)::int AS fetched,
              max(p.at_ms) FILTER (WHERE p.n = $8) AS last_ms,
              max(p.id::text) FILTER (WHERE p.n = $8) AS last_id
         FROM (SELECT body, id, floor(extract(epoch FROM updated_at) * 1000)::bigint AS at_ms,
                      row_number() OVER (ORDER BY updated_at, id) AS n
                 FROM leads
                WHERE tenant_id = $1 AND sandbox = $2
                  AND ($3::timestamptz IS NULL OR updated_at >= $3)
                  AND ($4::timestamptz IS NULL OR (updated_at, id) > ($4, $5::uuid))
                  AND updated_at < $6::timestamptz
                  AND updated_at < coalesce(timestamptz 'epoch' + nullif(current_setting('vcrm.list_floor', true), '')::bigint * interval '1 millisecond', 'infinity')
                ORDER BY updated_at, id
                LIMIT $7) AS p`,
      [
        tenantId,
        sandbox,
        o.updatedSince ?? null,
        o.after?.updatedAt ?? null,
        o.after?.id ?? null,
        o.now,
        o.limit + 1,
        o.limit,
      ],
    );
    page.catch(() => undefined); // read below, once COMMIT has answered
    return { page };
  });
  const row = (await page).rows[0]!;
  const next =
    row.fetched > o.limit && row.last_ms !== null && row.last_id !== null
      ? { updatedAt: new Date(Number(row.last_ms)), id: row.last_id }
      : null;
  return { json: row.json ?? '', next };
}

export interface SandboxSubmission {
  received_at: Date;
  outcome: 'created' | 'duplicate';
  lead_id: string;
  full_name: string;
  email: string | null;
  phone: string | null;
  event_id: string;
}

/**
 * What a test key submitted: every lead it created and every enquiry it added, newest first. The events are read
 * with their streams' data keys and opened (the name, email and phone are sealed; an erased person's read empty).
 */
export async function sandboxSubmissions(
  sql: Queryable,
  tenantId: string,
  keyId: string,
  limit = 100,
): Promise<SandboxSubmission[]> {
  const result = await sql.query<KeyedEventRow>(
    `SELECT ${OPENED_COLUMNS}
       FROM ${WITH_KEYS}
      WHERE events.tenant_id = $1 AND events.sandbox AND events.type IN ('lead.created', 'lead.enquiry_received')
        AND events.metadata->'actor'->>'key_id' = $2
      ORDER BY events.tx_id DESC, events.position DESC
      LIMIT $3`,
    [tenantId, keyId, limit],
  );
  const keys = personalDataKeysOf(sql);
  return result.rows.map((row) => {
    const event = toOpenedEvent(row, keys);
    const said = (event.data.payload ?? event.data.submission ?? {}) as Record<string, unknown>;
    const text = (value: unknown) => (typeof value === 'string' ? value : null);
    return {
      received_at: event.createdAt,
      outcome: event.type === 'lead.created' ? 'created' : 'duplicate',
      lead_id: event.streamId.slice('lead-'.length),
      full_name: text(said.full_name) ?? '',
      email: text(said.email),
      phone: text(said.phone),
      event_id: event.id,
    };
  });
}
