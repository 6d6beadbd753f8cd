import { digestText, footer, subjectOf, toldLine, type Told } from '../domain/notifications/words.js';
import type { Queryable } from '../storage/postgres.js';
import type { Workspace } from '../workspaces/workspace.js';
import { recordPath, type NotificationRow } from './facts.js';
import { issueUnsubscribeToken } from './settings.js';

/** A notification mail as nodemailer takes it. */
export interface NotificationMail {
  to: string;
  subject: string;
  text: string;
  /** The same on every try of one notification or digest: a mailbox that got it once can drop a second copy. */
  messageId: string;
  headers: Record<string, string>;
}

/** The page where a member of this workspace confirms stopping its mail (GET shows it, POST does it). */
export function unsubscribePath(workspace: Workspace, userId: string, token: string): string {
  return `/console/unsubscribe/${workspace.slug}/${userId}/${token}`;
}

const zoneOf = (workspace: Workspace) => workspace.settings.time_zone ?? 'UTC';

/**
 * The headers and footer every notification mail carries: List-Unsubscribe with its one-click POST (RFC 8058) at an
 * address good only for stopping this member's mail from this workspace, and a link to their settings.
 */
async function unsubscribing(sql: Queryable, base: string, workspace: Workspace, userId: string, now: Date) {
  const token = await issueUnsubscribeToken(sql, workspace.id, userId, now);
  const url = `${base}${unsubscribePath(workspace, userId, token)}`;
  return {
    headers: { 'List-Unsubscribe': `<${url}>`, 'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click' },
    footer: footer(workspace.name, `${base}/console/w/${workspace.slug}/notifications`, url),
  };
}

const messageId = (what: string, id: string, base: string) => `<${what}-${id}@${new URL(base).hostname || 'visa-crm'}>`;

export async function atOnceMail(
  sql: Queryable,
  input: { base: string; workspace: Workspace; to: string; row: NotificationRow; told: Told; now: Date },
): Promise<NotificationMail> {
  const { base, workspace, row } = input;
  const stop = await unsubscribing(sql, base, workspace, row.user_id, input.now);
  return {
    to: input.to,
    subject: subjectOf(row.kind, workspace.name),
    text: `${toldLine(input.told, zoneOf(workspace))}\n\nOpen it: ${base}${recordPath(workspace, row)}\n${stop.footer}`,
    messageId: messageId('notification', row.id, base),
    headers: stop.headers,
  };
}

export async function digestMail(
  sql: Queryable,
  input: {
    base: string;
    workspace: Workspace;
    to: string;
    userId: string;
    digestId: string;
    date: string;
    told: readonly { row: NotificationRow; told: Told }[];
    now: Date;
  },
): Promise<NotificationMail> {
  const { base, workspace } = input;
  const stop = await unsubscribing(sql, base, workspace, input.userId, input.now);
  const lines = input.told.map((t) => ({
    text: toldLine(t.told, zoneOf(workspace)),
    url: `${base}${recordPath(workspace, t.row)}`,
  }));
  return {
    to: input.to,
    subject: `Your digest for ${input.date} · ${workspace.name}`,
    text: `${digestText(lines, workspace.name, input.date)}\n${stop.footer}`,
    messageId: messageId('digest', input.digestId, base),
    headers: stop.headers,
  };
}
