import type pg from 'pg';
import { contentDigest, GENESIS, link, workspaceHead, type StreamHead } from './chain.js';
import type { EventRow } from './event-rows.js';
import type { GlobalPosition } from './types.js';

/** Where a chain breaks: the first event, in global order, whose revision or hash is not what its stream implies. */
export interface BrokenLink {
  eventId: string;
  streamId: string;
  revision: number;
  position: GlobalPosition;
  reason: 'revision_gap' | 'hash_mismatch' | 'anchor_mismatch';
  detail: string;
}

/** A head an auditor kept: the workspace head hash as of a position of the global log. */
export interface Anchor {
  at: GlobalPosition;
  head: string;
}

export interface VerifyResult {
  tenantId: string;
  events: number;
  streams: number;
  /** The workspace head after the last event (see chain.ts, workspaceHead), and the position of that event. */
  head: string;
  at: GlobalPosition | null;
  broken: BrokenLink | null;
}

/** An event row with its stored hash; the transaction id and position as text (compared as numbers in the code). */
type Row = Omit<EventRow, 'tx_id_text' | 'position'> & { hash: Buffer; tx: string; position_text: string };

const BATCH = 1000;

function after(a: GlobalPosition, b: GlobalPosition): boolean {
  const ta = BigInt(a.txId);
  const tb = BigInt(b.txId);
  return ta > tb || (ta === tb && a.position > b.position);
}

// Output columns are named apart from the table's: a bare ORDER BY position would sort the text ('10' before '8').

/**
 * Recomputes every chain of a workspace in global order and returns the first broken link. It reads in one
 * REPEATABLE READ snapshot, so an event committed while it pages cannot appear behind its cursor (which would look
 * like a gap). Deleting, inserting or reordering rows shows as a revision out of sequence or a hash that does not
 * follow; changing a row as a hash that does not match its content. Rewriting a chain's tail consistently (or
 * cutting it off) shows only against an anchor kept from before.
 */
export async function verifyChains(pool: pg.Pool, tenantId: string, anchor?: Anchor): Promise<VerifyResult> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
    const heads = new Map<string, StreamHead>();
    let cursor: GlobalPosition = { txId: '0', position: 0 };
    let events = 0;
    let last: GlobalPosition | null = null;
    let anchorChecked = anchor === undefined;
    const checkAnchor = (next: GlobalPosition | null, row: Row | undefined): BrokenLink | null => {
      if (anchorChecked || !anchor || (next !== null && !after(next, anchor.at))) return null;
      anchorChecked = true;
      const head = workspaceHead(heads.values());
      if (head === anchor.head) return null;
      return {
        eventId: row?.id ?? '',
        streamId: row?.stream_id ?? '',
        revision: row?.revision ?? -1,
        position: anchor.at,
        reason: 'anchor_mismatch',
        detail: `the workspace head at ${anchor.at.txId}/${anchor.at.position} is ${head}, not the kept ${anchor.head}`,
      };
    };
    for (;;) {
      const page = await client.query<Row>(
        `SELECT id, stream_id, revision, type, tenant_id, sandbox, data, metadata, created_at, hash,
                tx_id::text AS tx, position::text AS position_text
           FROM events WHERE tenant_id = $1 AND (tx_id, position) > ($2::xid8, $3::bigint)
          ORDER BY events.tx_id, events.position LIMIT $4`,
        [tenantId, cursor.txId, cursor.position, BATCH],
      );
      for (const row of page.rows) {
        const position = { txId: row.tx, position: Number(row.position_text) };
        const anchored = checkAnchor(position, row);
        if (anchored) return await done(anchored);
        const broken = checkRow(row, position, heads.get(row.stream_id));
        if (broken) return await done(broken);
        heads.set(row.stream_id, { streamId: row.stream_id, revision: row.revision, hash: row.hash });
        events += 1;
        last = position;
      }
      if (page.rows.length < BATCH) break;
      cursor = last!;
    }
    const anchored = checkAnchor(null, undefined);
    return await done(anchored);

    async function done(broken: BrokenLink | null): Promise<VerifyResult> {
      await client.query('COMMIT');
      return { tenantId, events, streams: heads.size, head: workspaceHead(heads.values()), at: last, broken };
    }
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}

function checkRow(row: Row, position: GlobalPosition, previous: StreamHead | undefined): BrokenLink | null {
  const base = { eventId: row.id, streamId: row.stream_id, revision: row.revision, position };
  const expectedRevision = (previous?.revision ?? -1) + 1;
  if (row.revision !== expectedRevision)
    return {
      ...base,
      reason: 'revision_gap',
      detail: `revision ${row.revision} where the stream's next is ${expectedRevision}`,
    };
  const digest = contentDigest({
    id: row.id,
    streamId: row.stream_id,
    type: row.type,
    tenantId: row.tenant_id,
    sandbox: row.sandbox,
    data: row.data,
    metadata: row.metadata,
    createdAt: row.created_at,
  });
  const expected = link(previous?.hash ?? GENESIS, row.revision, digest);
  if (!expected.equals(row.hash))
    return {
      ...base,
      reason: 'hash_mismatch',
      detail: `stored hash ${row.hash.toString('hex')}, recomputed ${expected.toString('hex')}`,
    };
  return null;
}

/** Parses an anchor as `verify` prints it: `<head hex>@<txId>/<position>`. */
export function parseAnchor(text: string): Anchor | null {
  const match = /^([0-9a-f]{64})@(\d+)\/(\d+)$/.exec(text.trim());
  if (!match) return null;
  return { head: match[1]!, at: { txId: match[2]!, position: Number(match[3]) } };
}

export function anchorText(head: string, at: GlobalPosition | null): string {
  return at ? `${head}@${at.txId}/${at.position}` : `${head}@0/0`;
}
