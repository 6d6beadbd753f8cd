import { idOfStream } from '../domain/streams.js';
import type { Lead } from '../domain/leads/lead.js';
import { leadFromPayload } from '../domain/leads/evolve.js';
import { onOneConnection, type Queryable } from '../storage/postgres.js';
import { OPENED_COLUMNS, toOpenedEvent, WITH_KEYS, type KeyedEventRow } from '../events/event-rows.js';
import type { PersonalDataKeys } from '../events/personal-data.js';
import type pg from 'pg';
import type { LeadListQuery } from '../schemas/lead.js';
import { waitForLeadWrites } from '../intake/sync-gate.js';

/** The public Lead, from this workspace and mode only. */
export async function findLead(
  sql: Queryable,
  tenantId: string,
  sandbox: boolean,
  leadId: string,
): Promise<Lead | undefined> {
  return (await findLeadRow(sql, tenantId, sandbox, leadId))?.lead;
}

/** The lead's JSON text as stored (leadJson's), answered as it is: no parse and no serialisation per read. */
export async function findLeadJson(
  sql: Queryable,
  tenantId: string,
  sandbox: boolean,
  leadId: string,
): Promise<string | undefined> {
  const result = await sql.query<{ body: string }>(
    'SELECT body::text AS body FROM leads WHERE id = $1 AND tenant_id = $2 AND sandbox = $3',
    [leadId, tenantId, sandbox],
  );
  return result.rows[0]?.body;
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
  // Read as a payload: a row written before one of the Lead's fields (until lead-rows.ts rewrote it) gets its default.
  return row ? { lead: leadFromPayload(row.body), revision: row.revision } : undefined;
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
  return { duplicate: { lead: leadFromPayload(row.body), matchedOn } };
}

/**
 * For each person (a phone and an email), the id of the lead `captureLookup` would find, or null: one statement for a
 * batch of captures, read before their transaction to know which lead streams it must lock.
 */
export async function captureLookupIds(
  sql: Queryable,
  tenantId: string,
  sandbox: boolean,
  persons: readonly { phone: string | null; email: string | null }[],
): Promise<(string | null)[]> {
  if (persons.length === 0) return [];
  const result = await sql.query<{ ord: string; id: string | null }>(
    `SELECT p.ord, found.id FROM unnest($3::text[], $4::text[]) WITH ORDINALITY AS p(phone, email, ord)
     LEFT JOIN LATERAL (
       SELECT id, created_at FROM leads WHERE tenant_id = $1 AND sandbox = $2 AND phone = p.phone
       UNION ALL
       SELECT id, created_at FROM leads WHERE tenant_id = $1 AND sandbox = $2 AND email = p.email
       ORDER BY created_at, id LIMIT 1
     ) found ON true
     ORDER BY p.ord`,
    [tenantId, sandbox, persons.map((p) => p.phone), persons.map((p) => p.email)],
  );
  return result.rows.map((r) => r.id);
}

/**
 * The filters of GET /v1/leads: every parameter of LeadListQuery but the paging ones, each a required key (undefined
 * when not given). A parameter added to the schema does not compile until the route passes it and listLeads reads it.
 */
export type ListFilters = {
  [K in Exclude<keyof LeadListQuery, 'cursor' | 'limit'>]-?: LeadListQuery[K] | undefined;
};

export interface ListOptions {
  filters: ListFilters;
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
 * A page of up to `limit` leads ascending by (updated_at, id), read off leads_sync (on lead_order, migration 220) with
 * each lead's stored body, built by PostgreSQL as one text: Node then parses one row instead of one per lead (and no
 * timestamps), the larger part of a page's cost in Node.
 *
 * First it waits until no lead write of the workspace and mode is in flight (the lead-sync gate, src/intake/sync-gate.ts),
 * then it reads the rows changed before `o.now` (read before this is called) in a statement of its own, whose snapshot
 * holds every write that held the gate before: a change that commits later carries a time no lower than `o.now`, so
 * it sorts after everything served (docs/architecture.md, "Sync never misses a change").
 */
export async function listLeads(
  pool: pg.Pool,
  tenantId: string,
  sandbox: boolean,
  o: ListOptions,
  connection: { namedStatements?: boolean } = {},
): Promise<LeadPage> {
  const { updated_since, ...unread } = o.filters;
  const everyFilterRead: Record<string, never> = unread;
  void everyFilterRead;
  // The gate's statement and the page's leave together on one connection, one round trip: the server runs the page's
  // (and takes its snapshot) only once the gate's has ended.
  const [, result] = await onOneConnection(
    pool,
    (sql) =>
      Promise.all([waitForLeadWrites(sql, tenantId, sandbox), readPage(sql, tenantId, sandbox, updated_since, o)]),
    connection,
  );
  const row = result.rows[0]!;
  const next =
    row.fetched > o.limit && row.last_ms !== null && row.last_id !== null
      ? { updatedAt: new Date(Number(row.last_ms)), id: row.last_id }
      : null;
  return { json: row.json ?? '', next };
}

interface PageRow {
  json: string | null;
  fetched: number;
  last_ms: string | null;
  last_id: string | null;
}

/**
 * The page's one statement. One row more than the page tells whether another follows; the stored body is exactly the
 * public Lead (the projection writes nothing else), so it is passed on as it is. The page's last row gives the next
 * cursor. One text for each combination of `updated_since` and cursor, so that each bound is an index bound in any
 * plan. Each value reaches the plan through a sub-select, so no plan depends on the values: PostgreSQL then runs the
 * statement's generic plan (prepared by name) rather than planning it again at every page for values whose custom plan
 * looked cheaper, which cost a third of a page's time in PostgreSQL (docs/benchmarks.md).
 */
function readPage(
  sql: Queryable,
  tenantId: string,
  sandbox: boolean,
  updated_since: string | undefined,
  o: ListOptions,
): Promise<pg.QueryResult<PageRow>> {
  const values: unknown[] = [tenantId, sandbox, o.now, o.limit + 1, o.limit];
  const bound = (value: unknown, type: string) => `(SELECT $${values.push(value)}::${type})`;
  const since =
    updated_since === undefined ? '' : `AND o.updated_at >= ${bound(new Date(updated_since), 'timestamptz')}`;
  const after = o.after
    ? `AND (o.updated_at, o.id) > (${bound(o.after.updatedAt, 'timestamptz')}, ${bound(o.after.id, 'uuid')})`
    : '';
  return sql.query<PageRow>(
    `SELECT string_agg(p.body::text, ',' ORDER BY p.n) FILTER (WHERE p.n <= $5) AS json,
            count(*)::int AS fetched,
            max(p.at_ms) FILTER (WHERE p.n = $5) AS last_ms,
            max(p.id::text) FILTER (WHERE p.n = $5) AS last_id
       FROM (SELECT l.body, o.id, floor(extract(epoch FROM o.updated_at) * 1000)::bigint AS at_ms,
                    row_number() OVER (ORDER BY o.updated_at, o.id) AS n
               FROM lead_order o JOIN leads l ON l.id = o.id
              WHERE o.tenant_id = (SELECT $1::uuid) AND o.sandbox = (SELECT $2::boolean)
                AND o.updated_at < (SELECT $3::timestamptz) ${since} ${after}
              ORDER BY o.updated_at, o.id
              LIMIT (SELECT $4::int)) AS p`,
    values,
  );
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
  keys: PersonalDataKeys | undefined,
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
  return result.rows.map((row) => {
    const event = toOpenedEvent(row, keys);
    const said = (event.data.payload ?? event.data.submission ?? {}) as Record<string, unknown>;
    const text = (value: unknown) => (typeof value === 'string' ? value : null);
    return {
      received_at: event.createdAt,
      outcome: event.type === 'lead.created' ? 'created' : 'duplicate',
      lead_id: idOfStream('lead', event.streamId),
      full_name: text(said.full_name) ?? '',
      email: text(said.email),
      phone: text(said.phone),
      event_id: event.id,
    };
  });
}
