import { OPENED_COLUMNS, toOpenedEvent, WITH_KEYS, type KeyedEventRow } from '../events/event-rows.js';
import type { PersonalDataKeys } from '../events/personal-data.js';
import type { GlobalPosition } from '../events/types.js';
import { EVENT_KINDS, type EventKind } from '../shared/enums.js';
import type { Queryable } from '../storage/postgres.js';
import { renderEnvelope, type PayloadVersion } from './versions/index.js';

/** How long the Events API keeps an event readable: as long as the delivery log keeps a delivery. */
export const EVENT_RETENTION_DAYS = 30;
const RETENTION_MS = EVENT_RETENTION_DAYS * 24 * 60 * 60 * 1000;
/** How far an event's place in the log may trail its creation time: longer than any transaction of the service. */
const CLOCK_SKEW = '5 minutes';

/** A webhook event as a delivery in the asked payload version carries it: the envelope's JSON text, and its place. */
export interface FeedEvent {
  id: string;
  type: EventKind;
  createdAt: Date;
  position: GlobalPosition;
  envelope: string;
}

export interface EventFeedQuery {
  tenantId: string;
  sandbox: boolean;
  /** `asc`: oldest first, reading only what no running transaction can still slot in behind; `desc`: newest first. */
  order: 'asc' | 'desc';
  kinds: readonly EventKind[];
  createdGte?: Date;
  createdLt?: Date;
  /** Exclusive: the page starts after this position in the page's order. */
  after?: GlobalPosition;
  limit: number;
  now: Date;
  /** The payload version the envelopes are rendered in. */
  version: PayloadVersion;
}

/**
 * The kinds a `types` filter names: exact kinds and prefixes ending in `*` (`lead.*`), or every kind when empty.
 * Answers the entries that name no kind, so the caller can refuse them by name.
 */
export function kindsOf(filter: readonly string[]): { kinds: EventKind[]; unknown: string[] } {
  if (filter.length === 0) return { kinds: [...EVENT_KINDS], unknown: [] };
  const unknown: string[] = [];
  const chosen = new Set<EventKind>();
  for (const entry of filter) {
    const matches = entry.endsWith('*')
      ? EVENT_KINDS.filter((kind) => kind.startsWith(entry.slice(0, -1)))
      : EVENT_KINDS.filter((kind) => kind === entry);
    if (matches.length === 0) unknown.push(entry);
    for (const kind of matches) chosen.add(kind);
  }
  return { kinds: EVENT_KINDS.filter((kind) => chosen.has(kind)), unknown };
}

const oldestKept = (now: Date) => new Date(now.getTime() - RETENTION_MS);

function toFeedEvent(
  row: KeyedEventRow,
  keys: PersonalDataKeys | undefined,
  version: PayloadVersion,
): FeedEvent | undefined {
  const event = toOpenedEvent(row, keys);
  const envelope = renderEnvelope(event, version);
  if (envelope === null) return undefined;
  return {
    id: event.id,
    type: event.type as EventKind,
    createdAt: event.createdAt,
    position: event.position,
    envelope,
  };
}

/**
 * One page of a workspace's webhook events in the key's mode, with one more looked for to tell whether more follow.
 * An erased person's events read as erasure left them (no personal value), as their delivery bodies do.
 */
export async function readEventFeed(
  sql: Queryable,
  keys: PersonalDataKeys | undefined,
  query: EventFeedQuery,
): Promise<{ events: FeedEvent[]; hasMore: boolean }> {
  const asc = query.order === 'asc';
  // The time window becomes a range of the log through events_tenant_created: from the first event created at most
  // CLOCK_SKEW before its start to the last created at most CLOCK_SKEW after its end (an event's time is read just
  // before its transaction writes it, so its place in the log can trail its time by that transaction's length).
  const result = await sql.query<KeyedEventRow>(
    `WITH first AS (SELECT tx_id, position FROM events
                     WHERE tenant_id = $1 AND sandbox = $2 AND created_at >= $4::timestamptz - $9::interval
                     ORDER BY created_at LIMIT 1),
          last AS (SELECT tx_id, position FROM events
                    WHERE tenant_id = $1 AND sandbox = $2 AND $5::timestamptz IS NOT NULL
                      AND created_at < $5::timestamptz + $9::interval
                    ORDER BY created_at DESC LIMIT 1)
     SELECT ${OPENED_COLUMNS} FROM ${WITH_KEYS}
      WHERE events.tenant_id = $1 AND events.sandbox = $2 AND events.type = ANY ($3::text[])
        AND (events.tx_id, events.position) >= (SELECT tx_id, position FROM first)
        AND ($5::timestamptz IS NULL OR (events.tx_id, events.position) <= (SELECT tx_id, position FROM last))
        AND events.created_at >= $4 AND ($5::timestamptz IS NULL OR events.created_at < $5)
        AND ($6::xid8 IS NULL OR ${asc ? '(events.tx_id, events.position) > ($6, $7)' : '(events.tx_id, events.position) < ($6, $7)'})
        ${asc ? 'AND events.tx_id < pg_snapshot_xmin(pg_current_snapshot())' : ''}
      ORDER BY events.tx_id ${asc ? 'ASC' : 'DESC'}, events.position ${asc ? 'ASC' : 'DESC'}
      LIMIT $8`,
    [
      query.tenantId,
      query.sandbox,
      query.kinds,
      maxDate(query.createdGte, oldestKept(query.now)),
      query.createdLt ?? null,
      query.after?.txId ?? null,
      query.after?.position ?? null,
      query.limit + 1,
      CLOCK_SKEW,
    ],
  );
  const events = result.rows.flatMap((row) => toFeedEvent(row, keys, query.version) ?? []);
  return { events: events.slice(0, query.limit), hasMore: result.rows.length > query.limit };
}

function maxDate(a: Date | undefined, b: Date): Date {
  return a && a > b ? a : b;
}

/** One webhook event of the workspace and mode by id: `expired` past the retention, undefined when there is none. */
export async function findFeedEvent(
  sql: Queryable,
  keys: PersonalDataKeys | undefined,
  where: { tenantId: string; sandbox: boolean; id: string; now: Date; version: PayloadVersion },
): Promise<FeedEvent | 'expired' | undefined> {
  const result = await sql.query<KeyedEventRow>(
    `SELECT ${OPENED_COLUMNS} FROM ${WITH_KEYS}
      WHERE events.id = $1 AND events.tenant_id = $2 AND events.sandbox = $3 AND events.type = ANY ($4::text[])`,
    [where.id, where.tenantId, where.sandbox, EVENT_KINDS],
  );
  const row = result.rows[0];
  if (!row) return undefined;
  const event = toFeedEvent(row, keys, where.version);
  if (!event) return undefined;
  return event.createdAt < oldestKept(where.now) ? 'expired' : event;
}

/** Where an event stands in the log, for a page that starts after it (`starting_after`). */
export async function positionOfEvent(
  sql: Queryable,
  where: { tenantId: string; sandbox: boolean; id: string },
): Promise<GlobalPosition | undefined> {
  const result = await sql.query<{ tx_id_text: string; position: number }>(
    'SELECT tx_id::text AS tx_id_text, position FROM events WHERE id = $1 AND tenant_id = $2 AND sandbox = $3',
    [where.id, where.tenantId, where.sandbox],
  );
  const row = result.rows[0];
  return row && { txId: row.tx_id_text, position: row.position };
}
