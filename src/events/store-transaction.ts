import type { KeyObject } from 'node:crypto';
import {
  PgCode,
  pgConstraint,
  pgErrorCode,
  type OpenedWriter,
  type Statement,
  type Writer,
} from '../storage/postgres.js';
import { newId } from '../shared/ids.js';
import type { StoreTransaction } from './event-store.js';
import { chainFrom, contentDigest, GENESIS, type ChainedContent } from './chain.js';
import { COLUMNS, readStreamKeyed, toStoredEvent, type EventRow, type StreamKeyRow } from './event-rows.js';
import { holdsPersonalData, saysPersonalData } from './personal-fields.js';
import { sealEvent, type PersonalDataKeys, type PersonOfStream } from './personal-data.js';
import {
  ErasedStreamError,
  WrongExpectedRevisionError,
  type CommandContext,
  type ExpectedRevision,
  type NewEvent,
  type RecordedEvent,
  type StoredEvent,
} from './types.js';

/** Stream locks: transaction-scoped advisory locks keyed by the stream id's 64-bit hash, taken in one sorted order. */
export function lockStatement(streams: string[]): Statement | null {
  const sorted = [...new Set(streams)].sort();
  if (sorted.length === 0) return null;
  return {
    text: 'SELECT pg_advisory_xact_lock(hashtextextended(s, 0)) FROM unnest($1::text[]) AS s ORDER BY s',
    values: [sorted],
  };
}

// An append to an existing stream: $1 ids, $2 stream, $3 tenant, $4 sandbox, $5 metadata, $6 time, $7 types,
// $8 data, $9 the expected current revision (NULL: any), $10 the events' content digests (hex). The stream's head
// is read under the stream lock, so no other writer can move it before this INSERT; the chain is then extended in
// SQL with the formula of chain.ts (link): sha256(previous || int4send(revision) || digest).
const APPEND_CHAINED = `
  WITH RECURSIVE head AS (
    SELECT revision, hash FROM events WHERE stream_id = $2 ORDER BY revision DESC LIMIT 1
  ), current AS (
    SELECT coalesce((SELECT revision FROM head), -1) AS revision,
           coalesce((SELECT hash FROM head), decode(repeat('00', 32), 'hex')) AS hash
  ), input AS (
    SELECT * FROM unnest($1::uuid[], $7::text[], $8::jsonb[], $10::text[]) WITH ORDINALITY AS e(id, type, data, digest, ord)
  ), chain AS (
    SELECT 0::bigint AS ord, revision, hash FROM current
    UNION ALL
    SELECT input.ord, chain.revision + 1, sha256(chain.hash || int4send(chain.revision + 1) || decode(input.digest, 'hex'))
      FROM chain JOIN input ON input.ord = chain.ord + 1
  )
  INSERT INTO events (id, stream_id, revision, type, tenant_id, sandbox, data, metadata, created_at, hash)
  -- In revision order, so that the positions the rows get keep each stream's revisions in global order.
  SELECT input.id, $2, chain.revision, input.type, $3, $4, input.data, $5, $6, chain.hash
    FROM input JOIN chain USING (ord), current
   WHERE $9::integer IS NULL OR current.revision = $9::integer
   ORDER BY input.ord
  RETURNING ${COLUMNS}`;

/** A new stream's events. */
const APPEND_NEW_STREAM = `INSERT INTO events (id, stream_id, revision, type, data, tenant_id, sandbox, metadata, created_at, hash)
SELECT e.id, $1, e.revision, e.type, e.data, $5, $6, $7, $8, decode(e.hash, 'hex')
  FROM unnest($2::uuid[], $3::integer[], $4::text[], $9::jsonb[], $10::text[]) AS e(id, revision, type, data, hash)`;

/** A stream's data key row, with the statement's placeholders for its stream, workspace, person, stored value and time. */
function insertKeyRow(stream: string, tenant: string, person: string, stored: string, at: string): string {
  return `INSERT INTO personal_data_keys (stream_id, tenant_id, person_id, wrapped_key, created_at)
          VALUES (${stream}, ${tenant}, ${person}, ${stored}, ${at})`;
}

/**
 * A new person's stream: its data key row and its events in one statement (the key row's INSERT runs although
 * nothing reads it: a data-modifying WITH always runs to completion).
 */
const APPEND_NEW_STREAM_WITH_KEY = `WITH key_row AS (${insertKeyRow('$1', '$5', '$11', '$12', '$8')})
${APPEND_NEW_STREAM}`;

const NEW_STREAM_CONFLICT = /^Key \(stream_id(?:, revision)?\)=\((.*?)(?:, \d+)?\) already exists/;
/** A stream's first events meet an existing stream on its events or, written first, on its data key row. */
const NEW_STREAM_CONSTRAINTS = new Set(['events_stream_revision', 'personal_data_keys_pkey']);

/** The opening statement and the stream locks: what a transaction runs right after BEGIN. */
export function openingStatements(first: Statement | undefined, streams: string[]): Statement[] {
  const lock = lockStatement(streams);
  return [...(first ? [first] : []), ...(lock ? [lock] : [])];
}

export class PostgresStoreTransaction implements StoreTransaction {
  readonly appended: RecordedEvent[] = [];
  private readonly locked = new Set<string>();
  /** Data keys of streams this transaction read or created (by stream), so an append after a read costs no query. */
  private readonly streamKeys = new Map<string, KeyObject | 'erased' | 'none'>();
  private now: Date;

  readonly sql: OpenedWriter;
  private readonly baseContext: CommandContext;
  private readonly keys?: PersonalDataKeys;
  private readonly personOf: PersonOfStream;
  constructor(
    sql: OpenedWriter,
    baseContext: CommandContext,
    streams: string[],
    /** Seals personal values with per-stream keys (personal-data.ts); absent: events are stored as given. */
    keys?: PersonalDataKeys,
    /** Whom a new stream's data key is filed under (no person: no key). */
    personOf: PersonOfStream = () => null,
  ) {
    this.sql = sql;
    this.baseContext = baseContext;
    this.keys = keys;
    this.personOf = personOf;
    for (const stream of streams) this.locked.add(stream);
    this.now = baseContext.now;
  }

  get context(): CommandContext {
    return { ...this.baseContext, now: this.now };
  }

  /** The same connection as `sql`: a command's trailing writes (quota counters, markers) run there too. */
  get writes(): Writer {
    return this.sql;
  }

  whenOpened(): Promise<void> {
    return this.sql.whenOpened();
  }

  setTime(now: Date): void {
    if (this.appended.length > 0) throw new Error('The time of a transaction is set before its first append');
    this.now = now;
  }

  private async lock(streams: string[]): Promise<void> {
    const statement = lockStatement(streams);
    if (statement) await this.sql.query(statement.text, statement.values);
    for (const stream of streams) this.locked.add(stream);
  }

  async readStream(streamId: string): Promise<StoredEvent[]> {
    const { events, key } = await readStreamKeyed(this.sql, streamId, this.keys);
    if (key !== undefined && this.keys) this.rememberKey(streamId, key);
    return events;
  }

  private rememberKey(streamId: string, row: StreamKeyRow): void {
    if (!this.keys) return;
    this.streamKeys.set(streamId, typeof row === 'string' ? row : this.keys.keyOf(row.stored));
  }

  /**
   * The key an existing stream's personal values are sealed with: known from a read in this transaction, else read
   * (under the stream's lock, so no erasure can commit in between). A lead stream written before encryption gets its
   * key now; an application stream of that time has no person to file a key under and stays in plaintext (null).
   * An erased person's stream takes no personal data any more.
   */
  private async existingStreamKey(streamId: string, events: NewEvent[]): Promise<KeyObject | null> {
    if (!this.streamKeys.has(streamId)) {
      const result = await this.sql.query<{ wrapped_key: string | null }>(
        'SELECT wrapped_key FROM personal_data_keys WHERE stream_id = $1',
        [streamId],
      );
      const row = result.rows[0];
      this.rememberKey(
        streamId,
        row === undefined ? 'none' : row.wrapped_key === null ? 'erased' : { stored: row.wrapped_key },
      );
    }
    const key = this.streamKeys.get(streamId);
    if (key === 'erased') {
      // What says nothing personal (a stage move of an erased lead) is stored in the clear; anything else is refused.
      if (events.some((e) => saysPersonalData(e.type, e.data))) throw new ErasedStreamError(streamId);
      return null;
    }
    if (typeof key === 'object') return key;
    return this.createKey(streamId, this.personOf(streamId, undefined));
  }

  /**
   * True once the transaction has written (or locked a row): it then has its id, and locking a stream now would let
   * that id sort before a commit it has already seen.
   */
  private async hasTransactionId(): Promise<boolean> {
    const result = await this.sql.query<{ assigned: boolean }>(
      'SELECT pg_current_xact_id_if_assigned() IS NOT NULL AS assigned',
    );
    return result.rows[0]!.assigned;
  }

  /** A new data key for a stream, filed under its person. */
  private async createKey(streamId: string, person: string | null): Promise<KeyObject | null> {
    const made = this.makeKey(streamId, person);
    if (made)
      await this.sql.query(insertKeyRow('$1', '$2', '$3', '$4', '$5'), [
        streamId,
        this.baseContext.tenantId,
        person,
        made.stored,
        this.now,
      ]);
    return made?.key ?? null;
  }

  /** A new data key for a stream filed under `person` (null: no keys, or no person to file it under), not yet written. */
  private makeKey(streamId: string, person: string | null): { key: KeyObject; stored: string } | null {
    if (!this.keys || person === null) return null;
    const made = this.keys.newKey();
    this.streamKeys.set(streamId, made.key);
    return made;
  }

  /** The data each event is stored with: its personal values sealed under the stream's key where it has any. */
  private stored(
    streamId: string,
    ids: string[],
    events: NewEvent[],
    key: KeyObject | null,
  ): Record<string, unknown>[] {
    if (key === null) return events.map((e) => e.data);
    const { tenantId } = this.baseContext;
    return events.map((e, i) => sealEvent({ tenantId, streamId, id: ids[i]!, type: e.type }, e.data, key));
  }

  async append(streamId: string, expected: ExpectedRevision, events: NewEvent[]): Promise<RecordedEvent[]> {
    if (events.length === 0) return [];
    if (expected === 'no_stream') return this.appendNewStream(streamId, events);
    if (!this.locked.has(streamId)) {
      // Locking after a write would let this transaction's id sort before a commit it has already seen.
      if (this.appended.length > 0) throw new Error(`Stream ${streamId} must be named when the transaction starts`);
      if (await this.hasTransactionId())
        throw new Error(`Stream ${streamId} must be named when the transaction starts`);
      await this.lock([streamId]);
    }
    const { tenantId, sandbox, metadata } = this.baseContext;
    const expectedCurrent = expected === 'any' ? null : expected;
    const ids = events.map((event) => event.id ?? newId());
    const personal = this.keys !== undefined && events.some((e) => holdsPersonalData(e.type, e.data));
    const data = this.stored(streamId, ids, events, personal ? await this.existingStreamKey(streamId, events) : null);
    const digests = events.map((e, i) =>
      contentDigest({ ...this.content(streamId, e), id: ids[i]!, data: data[i]! }).toString('hex'),
    );
    let rows: EventRow[];
    try {
      // One statement: the stream's head (revision and hash), the expectation check, the chain and the insert.
      const result = await this.sql.query<EventRow>(APPEND_CHAINED, [
        ids,
        streamId,
        tenantId,
        sandbox,
        JSON.stringify(metadata),
        this.now,
        events.map((e) => e.type),
        data.map((d) => JSON.stringify(d)),
        expectedCurrent,
        digests,
      ]);
      rows = result.rows;
    } catch (error) {
      // Another writer's event took the revision (the aborted transaction can no longer read which one is current).
      if (pgErrorCode(error) === PgCode.uniqueViolation && pgConstraint(error) === 'events_stream_revision')
        throw new WrongExpectedRevisionError(streamId, expected, 'unknown');
      throw error;
    }
    if (rows.length === 0)
      throw new WrongExpectedRevisionError(streamId, expected, await this.currentRevision(streamId));
    // Projections and the caller see the events as said, not as stored (sealed).
    const said = new Map(ids.map((id, i) => [id.toLowerCase(), events[i]!.data]));
    const stored = rows
      .map(toStoredEvent)
      .map((e) => ({ ...e, data: said.get(e.id.toLowerCase()) ?? e.data }))
      .sort((a, b) => a.revision - b.revision);
    this.appended.push(...stored);
    return stored;
  }

  /**
   * A new stream's events need nothing read back: their revisions are 0, 1, …, and the unique (stream_id, revision)
   * refuses them if the stream exists (no lock needed: any other writer of the stream fails the same way).
   */
  private async appendNewStream(streamId: string, events: NewEvent[]): Promise<RecordedEvent[]> {
    const { tenantId, sandbox, metadata } = this.baseContext;
    const recorded: RecordedEvent[] = events.map((event, revision) => ({
      id: event.id ?? newId(),
      streamId,
      revision,
      type: event.type,
      tenantId,
      sandbox,
      data: event.data,
      metadata,
      createdAt: this.now,
    }));
    const person = this.personOf(streamId, events[0]);
    const key = this.makeKey(streamId, person);
    const data = this.stored(
      streamId,
      recorded.map((e) => e.id),
      events,
      key?.key ?? null,
    );
    const hashes = chainFrom(
      GENESIS,
      0,
      recorded.map((e, i) => contentDigest({ ...e, data: data[i]! })),
    );
    const values = [
      streamId,
      recorded.map((e) => e.id),
      recorded.map((e) => e.revision),
      recorded.map((e) => e.type),
      tenantId,
      sandbox,
      JSON.stringify(metadata),
      this.now,
      data.map((d) => JSON.stringify(d)),
      hashes.map((h) => h.toString('hex')),
    ];
    // Nothing is read back, so the insert goes without waiting (it leaves with the projections' writes and COMMIT);
    // a stream that exists refuses it at COMMIT, which the store reports as a conflict (newStreamConflict).
    if (key) this.sql.send(APPEND_NEW_STREAM_WITH_KEY, [...values, person, key.stored]);
    else this.sql.send(APPEND_NEW_STREAM, values);
    this.appended.push(...recorded);
    return recorded;
  }

  private content(streamId: string, event: NewEvent): Omit<ChainedContent, 'id'> {
    const { tenantId, sandbox, metadata } = this.baseContext;
    return { streamId, type: event.type, tenantId, sandbox, data: event.data, metadata, createdAt: this.now };
  }

  private async currentRevision(streamId: string): Promise<number | 'no_stream'> {
    const result = await this.sql
      .query<{ revision: number | null }>('SELECT max(revision) AS revision FROM events WHERE stream_id = $1', [
        streamId,
      ])
      .catch(() => undefined);
    return result?.rows[0]?.revision ?? 'no_stream';
  }
}

/** A new stream's events refused at COMMIT because the stream already exists: the command may retry and decide again. */
export function newStreamConflict(error: unknown): WrongExpectedRevisionError | undefined {
  if (pgErrorCode(error) !== PgCode.uniqueViolation || !NEW_STREAM_CONSTRAINTS.has(pgConstraint(error) ?? ''))
    return undefined;
  const detail = typeof error === 'object' && error !== null && 'detail' in error ? String(error.detail) : '';
  return new WrongExpectedRevisionError(NEW_STREAM_CONFLICT.exec(detail)?.[1] ?? 'unknown', 'no_stream', 'unknown');
}
