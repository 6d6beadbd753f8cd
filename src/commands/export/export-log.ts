import type pg from 'pg';
import { workspaceHead, WorkspaceHeadDigest } from '../../events/chain.js';
import { anchorText } from '../../events/verify-chain.js';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  logHorizon,
  readWorkspaceLogWith,
  committedBehindRunning,
  streamHeadsAt,
  type HashedEvent,
} from '../../events/workspace-log.js';
import type { GlobalPosition } from '../../events/types.js';
import {
  EXPORT_FORMAT,
  EXPORT_VERSION,
  type ExportEvent,
  type ExportHeader,
  type ExportTrailer,
} from '../../schemas/export.js';
import type { Workspace } from '../../workspaces/workspace.js';
import { erasuresOf } from './erasure-ledger.js';
import { positionToken } from './position-token.js';
import type { Queryable } from '../../storage/postgres.js';
import { inTransaction } from '../../storage/transaction.js';

/** Events read per round trip: memory stays one page whatever the log's length. */
export const EXPORT_PAGE = 500;

export function headerLine(workspace: Workspace, after: GlobalPosition | null, now: Date): ExportHeader {
  const { id, slug, name, plan, status, settings } = workspace;
  return {
    format: EXPORT_FORMAT,
    version: EXPORT_VERSION,
    // Settings as stored: a captcha secret stays sealed (docs/decisions.md, "Export and import").
    workspace: { id, slug, name, plan, status, settings: settings as unknown as Record<string, unknown> },
    after: after ? positionToken(after) : null,
    exported_at: now.toISOString(),
  };
}

export function eventLine(event: HashedEvent): ExportEvent {
  return {
    id: event.id,
    stream: event.streamId,
    revision: event.revision,
    type: event.type,
    tenant: event.tenantId,
    sandbox: event.sandbox,
    time: event.createdAt.toISOString(),
    data: event.data,
    metadata: event.metadata,
    hash: event.hash.toString('hex'),
    position: positionToken(event.position),
    ...(event.personalKey
      ? {
          personal_key: {
            person: event.personalKey.person,
            wrapped: event.personalKey.wrapped,
            erased_at: event.personalKey.erasedAt?.toISOString() ?? null,
          },
        }
      : {}),
  };
}

/**
 * The export of a workspace's log after a position (the start when null), line by line: the header, every event
 * in global order, then the trailer with the count, the position to continue from and the workspace head there
 * (the head `audit verify` prints at that position). Each page is one statement of its own, so no snapshot is held
 * open while a slow reader drains the stream.
 */
export interface ExportOptions {
  onEvents?: (count: number) => void;
  /** How long to wait, at most, for transactions running when the export started to end (see below). */
  settleWaitMs?: number;
}

/** Long enough for any transaction of the service; a longer one's events go to the next export. */
export const SETTLE_WAIT_MS = 10_000;
const SETTLE_POLL_MS = 20;

export async function* exportLines(
  pool: pg.Pool,
  workspace: Workspace,
  after: GlobalPosition | null,
  now: Date,
  options: ExportOptions = {},
): AsyncGenerator<string> {
  const { onEvents = () => undefined, settleWaitMs = SETTLE_WAIT_MS } = options;
  // The reader sees only transactions older than every running one (in the whole server), so one running when the
  // export starts keeps the workspace's events committed after it out. When there are such events, the export waits
  // for it to end, up to settleWaitMs: it then holds everything committed before it started. `next` is exact either
  // way: what an export leaves out, the next one continuing from it holds.
  const horizon = await logHorizon(pool);
  const deadline = Date.now() + settleWaitMs;
  yield `${JSON.stringify(headerLine(workspace, after, now))}\n`;
  let cursor: GlobalPosition = after ?? { txId: '0', position: 0 };
  let events = 0;
  let last = false;
  for (;;) {
    const page = await readWorkspaceLogWith(pool, workspace.id, cursor, EXPORT_PAGE);
    if (page.length > 0) {
      yield page.map((event) => `${JSON.stringify(eventLine(event))}\n`).join('');
      events += page.length;
      cursor = page[page.length - 1]!.position;
      onEvents(page.length);
    }
    if (page.length === EXPORT_PAGE) continue;
    if (last) break;
    // Settled (or waited long enough): one more page, for what settled between this page and the check.
    const behind = await committedBehindRunning(pool, workspace.id, cursor, horizon);
    if (!behind || Date.now() >= deadline) last = true;
    else await sleep(SETTLE_POLL_MS);
  }
  const head = await workspaceHeadAt(pool, workspace.id, cursor);
  // Read last: every erasure committed before the export ended, including those of people in earlier exports. Left
  // out when there is none, so such a trailer reads as before the ledger.
  const erasures = await erasuresOf(pool, workspace.id);
  const trailer: ExportTrailer = {
    trailer: true,
    events,
    next: positionToken(cursor),
    head,
    anchor: anchorText(head, cursor),
    ...(erasures.length > 0 ? { erasures } : {}),
  };
  yield `${JSON.stringify(trailer)}\n`;
}

/** Stream heads read per FETCH while the trailer's workspace head is hashed. */
const HEAD_PAGE = 1000;

/**
 * The workspace head at a position: workspaceHead over streamHeadsAt, without every stream's head in memory at once
 * (at a million events, a third of a million heads as rows, hex and one JSON text were the export's peak). The heads
 * come through a cursor sorted by the bytes of their names (COLLATE "C"), which is workspaceHead's order (UTF-16 code
 * units) for every name but one holding a character past U+FFFF beside one in U+E000–U+FFFF; a name out of
 * workspaceHead's order falls back to sorting them all here. The cursor's one statement sees one snapshot.
 */
export async function workspaceHeadAt(pool: pg.Pool, tenantId: string, at: GlobalPosition): Promise<string> {
  const head = await inTransaction(pool, async (tx) => {
    await tx.query(
      `DECLARE stream_heads NO SCROLL CURSOR FOR
       SELECT DISTINCT ON (stream_id COLLATE "C") stream_id, revision, hash FROM events
        WHERE tenant_id = $1 AND (tx_id, position) <= ($2::xid8, $3::bigint)
        ORDER BY stream_id COLLATE "C", revision DESC`,
      [tenantId, at.txId, at.position],
    );
    return hashHeads(tx);
  });
  return head ?? workspaceHead(await streamHeadsAt(pool, tenantId, at));
}

/** The workspace head over the cursor's rows, hashed page by page; undefined when a name is out of its order. */
async function hashHeads(sql: Queryable): Promise<string | undefined> {
  const digest = new WorkspaceHeadDigest();
  let previous: string | undefined;
  for (;;) {
    const page = await sql.query<{ stream_id: string; revision: number; hash: Buffer }>(
      `FETCH ${HEAD_PAGE} FROM stream_heads`,
    );
    for (const row of page.rows) {
      if (previous !== undefined && !(previous < row.stream_id)) return undefined;
      previous = row.stream_id;
      digest.add(row.stream_id, row.revision, row.hash.toString('hex'));
    }
    if (page.rows.length < HEAD_PAGE) return digest.hex();
  }
}
