/**
 * What a member hears about (docs/decisions.md, "Member notifications"): a lead or a task given to them, their task
 * gone overdue, their lead's follow-up due, and for owners and admins an endpoint paused. Plain data and functions: the
 * subscriber (src/notifications) reads the events and writes what these decide.
 */
import { streamOf } from '../streams.js';

export const NOTIFICATION_KINDS = [
  'lead_assigned',
  'task_assigned',
  'task_overdue',
  'follow_up_due',
  'endpoint_paused',
] as const;
export type NotificationKind = (typeof NOTIFICATION_KINDS)[number];

/** One thing one member is to hear about; `dedupe` is what makes a replay of the same cause write nothing new. */
export interface NotificationIntent {
  userId: string;
  kind: NotificationKind;
  subjectId: string;
  dedupe: string;
}

/** A workspace user as far as notifications care. */
export interface Listener {
  id: string;
  role: string;
  active: boolean;
  pending?: string;
}

/** An event as the subscriber reads it: no more than the decision needs. */
export interface NotifiableEvent {
  id: string;
  type: string;
  /** Its stream (`task-<id>`…): a task.changed names its task only there. */
  streamId: string;
  sandbox: boolean;
  data: Record<string, unknown>;
  /** The member who caused it, if a member did: nobody is told of what they did themselves. */
  actorUserId: string | null;
}

const idOf = (value: unknown, key: string): string | null => {
  if (typeof value !== 'object' || value === null) return null;
  const id = (value as Record<string, unknown>)[key];
  return typeof id === 'string' && id !== '' ? id : null;
};

/** Who may hear of a paused endpoint: the roles that may resume it (passed in from the permission table). */
export type MayOversee = (role: string) => boolean;

/**
 * The notifications an event makes. `previousAssignee` is a task.changed's assignee before the change (the subscriber
 * reads it from the stream), so a change of title or due time tells nobody again.
 */
export function intentsOf(
  event: NotifiableEvent,
  context: { users: readonly Listener[]; mayOversee: MayOversee; previousAssignee?: string | null },
): NotificationIntent[] {
  const toMember = (userId: string | null, kind: NotificationKind, subjectId: string | null, dedupe: string) =>
    userId && subjectId && userId !== event.actorUserId ? [{ userId, kind, subjectId, dedupe }] : [];
  const payload = event.data.payload as Record<string, unknown> | undefined;
  // Test mode is a sandbox for integrations, not staff work: only the paused endpoint is told of in it.
  if (event.sandbox && event.type !== 'webhook_endpoint.paused') return [];
  switch (event.type) {
    case 'lead.created':
    case 'lead.assigned':
      return toMember(idOf(payload?.owner, 'id'), 'lead_assigned', idOf(payload, 'id'), `event:${event.id}`);
    case 'task.created':
      return toMember(
        idOf(event.data.assignee, 'user_id'),
        'task_assigned',
        idOf(event.data, 'task_id'),
        `event:${event.id}`,
      );
    case 'task.changed': {
      const now = idOf(event.data.assignee, 'user_id');
      if (now === (context.previousAssignee ?? null)) return [];
      // Its data holds the task as it now is, not the task's id (2026-11-30: reassigned tasks told nobody).
      const task = streamOf(event.streamId);
      return toMember(now, 'task_assigned', task?.kind === 'task' ? task.id : null, `event:${event.id}`);
    }
    case 'task.overdue': {
      const taskId = idOf(payload, 'id');
      const dueAt = typeof event.data.due_at === 'string' ? event.data.due_at : '';
      // One per due time: a task moved and overdue again is news again, a replayed overdue is not.
      return toMember(idOf(payload?.assignee, 'user_id'), 'task_overdue', taskId, `overdue:${taskId}:${dueAt}`);
    }
    case 'webhook_endpoint.paused': {
      const endpointId = idOf(event.data, 'endpoint_id');
      return context.users
        .filter((u) => u.active && !u.pending && context.mayOversee(u.role))
        .flatMap((u) => toMember(u.id, 'endpoint_paused', endpointId, `event:${event.id}`));
    }
    default:
      return [];
  }
}

/** The follow-up of a lead whose time came: one notification per lead, owner and follow-up time. */
export function followUpIntent(lead: { id: string; ownerId: string; followUpAt: string }): NotificationIntent {
  return {
    userId: lead.ownerId,
    kind: 'follow_up_due',
    subjectId: lead.id,
    dedupe: `follow-up:${lead.id}:${lead.followUpAt}`,
  };
}

/** The event types the subscriber reads further; others only move its checkpoint. */
export const NOTIFYING_TYPES: readonly string[] = [
  'lead.created',
  'lead.assigned',
  'task.created',
  'task.changed',
  'task.overdue',
  'webhook_endpoint.paused',
];
