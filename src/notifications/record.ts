import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { followUpIntent, intentsOf, NOTIFYING_TYPES, type NotificationIntent } from '../domain/notifications/kinds.js';
import type { PersonalDataKeys } from '../events/personal-data.js';
import { readAllWith } from '../events/postgres-event-store.js';
import type { GlobalPosition, StoredEvent } from '../events/types.js';
import { can, type Role } from '../identity/permissions.js';
import { withTransaction, type Queryable } from '../storage/postgres.js';
import { findWorkspacesById } from '../workspaces/repository.js';
import type { Workspace } from '../workspaces/workspace.js';

export const NOTIFICATIONS_SUBSCRIPTION = 'member-notifications';
/** The channel new notifications are announced on, so a mailer in any process sends the at-once ones. */
export const NOTIFICATIONS_CHANNEL = 'member_notifications';
/** Events older than this when read are not told of: an import or a restore replays no news (docs/decisions.md). */
const STALE_MS = 24 * 3_600_000;

export interface RecordResult {
  events: number;
  recorded: number;
  busy: boolean;
}

/**
 * One step of the notifications subscriber: in one transaction, locks its checkpoint (another process holding it
 * makes this one skip), reads the next events, writes a notification for each member each event concerns, and moves
 * the checkpoint. Rows and checkpoint commit together, and (workspace, member, dedupe) is unique, so a crash loses
 * nothing and a replay writes nothing twice.
 */
export async function recordNotificationsBatch(
  pool: pg.Pool,
  keys: PersonalDataKeys | undefined,
  now: Date,
  batchSize = 500,
): Promise<RecordResult> {
  return withTransaction(pool, async (sql) => {
    const at = await lockCheckpoint(sql);
    if (at === 'busy') return { events: 0, recorded: 0, busy: true };
    const events = await readAllWith(sql, at, batchSize, true, keys);
    if (events.length === 0) return { events: 0, recorded: 0, busy: false };
    const news = events.filter((event) => isNews(event, now));
    // Each workspace read once per batch and the intents written in one statement: a round trip per event cost each
    // delivery 0.12 ms of this process and 0.15 ms of PostgreSQL at a 100,000 backlog (bench:webhooks, 2026-11-29).
    const workspaces = await findWorkspacesById(
      sql,
      news.map((event) => event.tenantId),
    );
    const assignees = await assigneesBefore(
      sql,
      news.filter((event) => event.type === 'task.changed'),
    );
    const told = news.flatMap((event) =>
      intentsOfEvent(event, workspaces.get(event.tenantId), assignees.get(event.id)),
    );
    const recorded = await insertToldIntents(sql, told, now);
    await sql.query(
      'UPDATE subscription_checkpoints SET tx_id = $2::xid8, position = $3, updated_at = $4 WHERE name = $1',
      [NOTIFICATIONS_SUBSCRIPTION, events.at(-1)!.position.txId, events.at(-1)!.position.position, now],
    );
    if (recorded > 0) await sql.query(`SELECT pg_notify('${NOTIFICATIONS_CHANNEL}', '')`);
    return { events: events.length, recorded, busy: false };
  });
}

async function lockCheckpoint(sql: Queryable): Promise<GlobalPosition | 'busy'> {
  const row = await sql.query<{ tx_id_text: string; position: number }>(
    'SELECT tx_id::text AS tx_id_text, position FROM subscription_checkpoints WHERE name = $1 FOR UPDATE SKIP LOCKED',
    [NOTIFICATIONS_SUBSCRIPTION],
  );
  const at = row.rows[0];
  return at ? { txId: at.tx_id_text, position: Number(at.position) } : 'busy';
}

const actorUserId = (event: StoredEvent): string | null => {
  const actor = event.metadata.actor;
  return actor.type === 'user' && typeof actor.user_id === 'string' ? actor.user_id : null;
};

/** An event members may be told of: of a notifying type, and not older than a day when read. */
const isNews = (event: StoredEvent, now: Date): boolean =>
  NOTIFYING_TYPES.includes(event.type) && now.getTime() - event.createdAt.getTime() <= STALE_MS;

/** An intent with the event it came from: its workspace, mode and time. */
interface ToldIntent {
  intent: NotificationIntent;
  tenantId: string;
  sandbox: boolean;
  happenedAt: Date;
}

/** What one event tells whom; `previousAssignee` is a task.changed's assignee before it (assigneesBefore). */
function intentsOfEvent(
  event: StoredEvent,
  workspace: Workspace | undefined,
  previousAssignee: string | null | undefined,
): ToldIntent[] {
  if (!workspace) return [];
  const intents = intentsOf(
    {
      id: event.id,
      type: event.type,
      streamId: event.streamId,
      sandbox: event.sandbox,
      data: event.data,
      actorUserId: actorUserId(event),
    },
    {
      users: workspace.settings.users,
      mayOversee: (role) => can(role as Role, 'webhooks.resume'),
      previousAssignee,
    },
  );
  return intents.map((intent) => ({
    intent,
    tenantId: event.tenantId,
    sandbox: event.sandbox,
    happenedAt: event.createdAt,
  }));
}

/**
 * Each task.changed's task assignee before it (the last task.created or task.changed of its stream before it), by
 * event id, in one statement for the batch: two changes of one task in a batch each get the one before their own.
 */
async function assigneesBefore(sql: Queryable, changes: readonly StoredEvent[]): Promise<Map<string, string | null>> {
  if (changes.length === 0) return new Map();
  const result = await sql.query<{ id: string; user_id: string | null }>(
    `SELECT c.id, (SELECT e.data->'assignee'->>'user_id' FROM events e
                    WHERE e.stream_id = c.stream_id AND e.revision < c.revision
                      AND e.type IN ('task.created', 'task.changed')
                    ORDER BY e.revision DESC LIMIT 1) AS user_id
       FROM unnest($1::text[], $2::text[], $3::int[]) AS c(id, stream_id, revision)`,
    [changes.map((event) => event.id), changes.map((event) => event.streamId), changes.map((event) => event.revision)],
  );
  return new Map(result.rows.map((row) => [row.id, row.user_id]));
}

/** Writes the intents that are new (the unique key drops a replay's); how many were written. */
export async function insertIntents(
  sql: Queryable,
  tenantId: string,
  sandbox: boolean,
  intents: readonly NotificationIntent[],
  happenedAt: Date,
  now: Date,
): Promise<number> {
  return insertToldIntents(
    sql,
    intents.map((intent) => ({ intent, tenantId, sandbox, happenedAt })),
    now,
  );
}

/** Writes the intents of a batch of events in one statement, those that are new; how many were written. */
async function insertToldIntents(sql: Queryable, told: readonly ToldIntent[], now: Date): Promise<number> {
  if (told.length === 0) return 0;
  const inserted = await sql.query(
    `INSERT INTO member_notifications (id, tenant_id, user_id, kind, subject_id, sandbox, dedupe, happened_at, created_at)
     SELECT i.id, i.tenant_id, i.user_id, i.kind, i.subject_id, i.sandbox, i.dedupe, i.happened_at, $1
       FROM unnest($2::uuid[], $3::uuid[], $4::text[], $5::text[], $6::uuid[], $7::boolean[], $8::text[], $9::timestamptz[])
            AS i(id, tenant_id, user_id, kind, subject_id, sandbox, dedupe, happened_at)
     ON CONFLICT (tenant_id, user_id, dedupe) DO NOTHING`,
    [
      now,
      told.map(() => randomUUID()),
      told.map((t) => t.tenantId),
      told.map((t) => t.intent.userId),
      told.map((t) => t.intent.kind),
      told.map((t) => t.intent.subjectId),
      told.map((t) => t.sandbox),
      told.map((t) => t.intent.dedupe),
      told.map((t) => t.happenedAt),
    ],
  );
  return inserted.rowCount ?? 0;
}

/**
 * Follow-ups that fell due in the last day and were not told of yet: one notification to the lead's owner each. Not
 * an event (a follow-up falls due by the clock), so a scan through leads_follow_up_due (on lead_order, whose
 * `follow_up_at` is the body's `next_follow_up_at`: migration 220); the dedupe key is the lead and
 * the follow-up's time, so scanning the same day again writes nothing twice.
 */
export async function recordDueFollowUps(pool: pg.Pool, now: Date, limit = 1000): Promise<number> {
  const due = await pool.query<{ id: string; tenant_id: string; owner_id: string; follow_up_at: string }>(
    `SELECT id, tenant_id, owner_id::text AS owner_id, follow_up_at FROM lead_rows
      WHERE owner_id IS NOT NULL AND converted = false AND sandbox = false
        AND follow_up_at IS NOT NULL AND body->>'lost_reason' IS NULL
        AND follow_up_at <= $1 AND follow_up_at > $2
        AND NOT EXISTS (SELECT 1 FROM member_notifications n
                         WHERE n.tenant_id = lead_rows.tenant_id AND n.user_id = lead_rows.owner_id::text
                           AND n.dedupe = 'follow-up:' || lead_rows.id || ':' || lead_rows.follow_up_at)
      ORDER BY follow_up_at LIMIT $3`,
    [now.toISOString(), new Date(now.getTime() - STALE_MS).toISOString(), limit],
  );
  let recorded = 0;
  for (const lead of due.rows) {
    const intent = followUpIntent({ id: lead.id, ownerId: lead.owner_id, followUpAt: lead.follow_up_at });
    recorded += await insertIntents(pool, lead.tenant_id, false, [intent], new Date(lead.follow_up_at), now);
  }
  if (recorded > 0) await pool.query(`SELECT pg_notify('${NOTIFICATIONS_CHANNEL}', '')`);
  return recorded;
}
