import type { NotificationKind } from './kinds.js';

/** What a notification says, read from the records when it is shown or mailed (never stored with it). */
export type Told =
  | { kind: 'lead_assigned'; leadName: string; stage: string }
  | { kind: 'follow_up_due'; leadName: string; followUpAt: Date }
  | { kind: 'task_assigned'; title: string; dueAt: Date }
  | { kind: 'task_overdue'; title: string; dueAt: Date }
  | { kind: 'endpoint_paused'; url: string; sandbox: boolean };

/** A wall time of the zone with the zone's short name, as the console shows it ("2026-11-27 09:00 GMT+5:30"). */
export function wallText(at: Date, zone: string): string {
  const parts: Record<string, string> = {};
  const format = new Intl.DateTimeFormat('en-CA', {
    timeZone: zone,
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    hourCycle: 'h23',
    timeZoneName: 'short',
  });
  for (const p of format.formatToParts(at)) parts[p.type] = p.value;
  return `${parts.year}-${parts.month}-${parts.day} ${parts.hour}:${parts.minute} ${parts.timeZoneName ?? zone}`;
}

const named = (name: string) => (name === '' ? 'a person whose data was erased' : name);

/** One line, the same in the mail, the digest and on Today. */
export function toldLine(told: Told, zone: string): string {
  switch (told.kind) {
    case 'lead_assigned':
      return `Lead assigned to you: ${named(told.leadName)} (${told.stage})`;
    case 'follow_up_due':
      return `Follow-up due: ${named(told.leadName)}, ${wallText(told.followUpAt, zone)}`;
    case 'task_assigned':
      return `Task assigned to you: ${told.title}, due ${wallText(told.dueAt, zone)}`;
    case 'task_overdue':
      return `Task overdue: ${told.title}, was due ${wallText(told.dueAt, zone)}`;
    case 'endpoint_paused':
      return `Webhook endpoint paused: ${told.url}${told.sandbox ? ' (test mode)' : ''}`;
  }
}

/** The mail subject of one notification sent at once. */
export function subjectOf(kind: NotificationKind, workspaceName: string): string {
  const what: Record<NotificationKind, string> = {
    lead_assigned: 'A lead was assigned to you',
    follow_up_due: 'A follow-up is due',
    task_assigned: 'A task was assigned to you',
    task_overdue: 'Your task is overdue',
    endpoint_paused: 'A webhook endpoint was paused',
  };
  return `${what[kind]} · ${workspaceName}`;
}

/** The footer every notification mail ends with: why it came, and how to stop it. */
export function footer(workspaceName: string, settingsUrl: string, unsubscribeUrl: string): string {
  return [
    '',
    '--',
    `You get this as a member of ${workspaceName}. Choose what you get: ${settingsUrl}`,
    `Stop these emails (no sign-in needed): ${unsubscribeUrl}`,
    '',
  ].join('\n');
}

/** The hour at which a member's digest goes out, in the workspace's zone. */
export const DIGEST_HOUR = 8;

/** The zone's date (`yyyy-mm-dd`) and hour at an instant: when a member's morning has come. */
export function localDateAndHour(at: Date, zone: string): { date: string; hour: number } {
  const parts: Record<string, string> = {};
  const format = new Intl.DateTimeFormat('en-CA', {
    timeZone: zone,
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    hourCycle: 'h23',
  });
  for (const p of format.formatToParts(at)) parts[p.type] = p.value;
  return { date: `${parts.year}-${parts.month}-${parts.day}`, hour: Number(parts.hour) };
}

/** The digest's body: one line per notification, each with its link. */
export function digestText(lines: readonly { text: string; url: string }[], workspaceName: string, date: string) {
  return [
    `What happened for you in ${workspaceName} since your last digest (${date}):`,
    '',
    ...lines.flatMap((l) => [`- ${l.text}`, `  ${l.url}`]),
  ].join('\n');
}
