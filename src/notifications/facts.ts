import type { NotificationKind } from '../domain/notifications/kinds.js';
import type { Told } from '../domain/notifications/words.js';
import { activeMember } from '../identity/members.js';
import { can, type Operation } from '../identity/permissions.js';
import type { Queryable } from '../storage/postgres.js';
import type { Workspace, WorkspaceUser } from '../workspaces/workspace.js';

/** A stored notification as the senders and Today read it. */
export interface NotificationRow {
  id: string;
  tenant_id: string;
  user_id: string;
  kind: NotificationKind;
  subject_id: string;
  sandbox: boolean;
  happened_at: Date;
}

/** What the member's role must allow to hear of each kind (the permission table's operations). */
const NEEDS: Record<NotificationKind, Operation> = {
  lead_assigned: 'leads.view',
  follow_up_due: 'leads.view',
  task_assigned: 'tasks.view',
  task_overdue: 'tasks.view',
  endpoint_paused: 'webhooks.resume',
};

/** The workspace's active, accepted member of this id (an invitee or a former member hears nothing). */
export function listeningMember(workspace: Workspace, userId: string): WorkspaceUser | undefined {
  if (workspace.status !== 'active') return undefined;
  const user = workspace.settings.users.find((u) => u.id === userId);
  return user && activeMember(workspace, user.email)?.id === userId ? user : undefined;
}

/**
 * What a notification says now, or null when its member may not hear of it any more: checked whenever it is sent or
 * shown, not only when it was written. The member must still be an active member whose role may see the kind, and
 * the record, read in the notification's own workspace, must still be theirs (the lead still theirs, the task still
 * theirs and, for overdue, still open; the endpoint still paused).
 */
export async function tellable(sql: Queryable, workspace: Workspace, row: NotificationRow): Promise<Told | null> {
  if (row.tenant_id !== workspace.id) return null;
  const member = listeningMember(workspace, row.user_id);
  if (!member || !can(member.role, NEEDS[row.kind])) return null;
  switch (row.kind) {
    case 'lead_assigned':
    case 'follow_up_due':
      return leadFacts(sql, row);
    case 'task_assigned':
    case 'task_overdue':
      return taskFacts(sql, row);
    case 'endpoint_paused':
      return endpointFacts(sql, row);
  }
}

async function leadFacts(sql: Queryable, row: NotificationRow): Promise<Told | null> {
  const lead = (
    await sql.query<{
      full_name: string;
      stage: string;
      follow_up_at: string | null;
      lost: boolean;
      converted: boolean;
    }>(
      `SELECT coalesce(body->>'full_name', '') AS full_name, coalesce(body->'stage'->>'name', '') AS stage,
              body->>'next_follow_up_at' AS follow_up_at, body->>'lost_reason' IS NOT NULL AS lost, converted
         FROM leads WHERE tenant_id = $1 AND id = $2 AND sandbox = false AND owner_id = $3::uuid`,
      [row.tenant_id, row.subject_id, row.user_id],
    )
  ).rows[0];
  if (!lead) return null;
  if (row.kind === 'lead_assigned') return { kind: 'lead_assigned', leadName: lead.full_name, stage: lead.stage };
  if (!lead.follow_up_at || lead.lost || lead.converted) return null;
  return { kind: 'follow_up_due', leadName: lead.full_name, followUpAt: new Date(lead.follow_up_at) };
}

async function taskFacts(sql: Queryable, row: NotificationRow): Promise<Told | null> {
  const task = (
    await sql.query<{ title: string; due_at: Date; open: boolean }>(
      `SELECT coalesce(body->>'title', '') AS title, due_at, body->>'status' = 'open' AS open
         FROM tasks WHERE tenant_id = $1 AND id = $2 AND sandbox = false AND body->'assignee'->>'user_id' = $3`,
      [row.tenant_id, row.subject_id, row.user_id],
    )
  ).rows[0];
  if (!task) return null;
  if (row.kind === 'task_overdue')
    return task.open ? { kind: 'task_overdue', title: task.title, dueAt: task.due_at } : null;
  return { kind: 'task_assigned', title: task.title, dueAt: task.due_at };
}

async function endpointFacts(sql: Queryable, row: NotificationRow): Promise<Told | null> {
  const endpoint = (
    await sql.query<{ url: string; sandbox: boolean }>(
      `SELECT url, sandbox FROM webhook_endpoints WHERE tenant_id = $1 AND id = $2 AND status = 'paused'`,
      [row.tenant_id, row.subject_id],
    )
  ).rows[0];
  return endpoint ? { kind: 'endpoint_paused', url: safeUrl(endpoint.url), sandbox: endpoint.sandbox } : null;
}

/** An endpoint's URL without its query or credentials (receivers put tokens there), as the owner notice shows it. */
function safeUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return '';
  }
}

/** Where a notification's record is in the console, under /console. */
export function recordPath(workspace: Workspace, row: Pick<NotificationRow, 'kind' | 'subject_id'>): string {
  const base = `/console/w/${workspace.slug}`;
  switch (row.kind) {
    case 'lead_assigned':
    case 'follow_up_due':
      return `${base}/leads/${row.subject_id}`;
    case 'task_assigned':
    case 'task_overdue':
      return `${base}/tasks/${row.subject_id}`;
    case 'endpoint_paused':
      return `${base}/webhooks/${row.subject_id}`;
  }
}
