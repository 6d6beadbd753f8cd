import type { Actor, StoredEvent } from '../../events/types.js';

/*
 * What an event did, in words: shared by \`visa-crm history\` and the admin interface's history routes, so both say the
 * same thing about the same event.
 */

export function actorText(actor: Actor | undefined): string {
  if (!actor) return 'unknown';
  switch (actor.type) {
    case 'user':
      return (
        [actor.name, actor.email ? `<${actor.email}>` : null].filter(Boolean).join(' ') ||
        `user ${actor.user_id ?? '?'}`
      );
    case 'key':
      return `API key ${actor.key_name ? `"${actor.key_name}" ` : ''}(${actor.key_id})`;
    case 'system':
      return `system (${actor.name})`;
  }
}

type Data = Record<string, unknown>;
const obj = (value: unknown): Data => (typeof value === 'object' && value !== null ? (value as Data) : {});
const str = (value: unknown): string => (value === null || value === undefined ? '-' : String(value));

/** One line saying what an event did, from the facts it stores. */
export function eventSummary(event: Pick<StoredEvent, 'type' | 'data'>): string {
  const d = event.data;
  const payload = obj(d.payload);
  switch (event.type) {
    case 'application.opened': {
      const modules = (d.modules as { key: string; selected: boolean }[]).map(
        (m) => `${m.key}${m.selected ? '' : ' (off)'}`,
      );
      return `opened ${str(d.case_ref)} from lead ${str(d.lead_id)}; stages ${(d.stages as { key: string }[]).map((s) => s.key).join(' > ')}; modules ${modules.join(', ')}`;
    }
    case 'application.stage_changed': {
      const c = obj(payload.stage_change);
      const passed = (c.passed_stage_ids as string[] | undefined) ?? [];
      return `stage ${str(c.from_stage_key)} -> ${str(c.to_stage_key)} (${str(c.direction)}, ${d.cause === 'modules' ? 'after module updates' : d.cause === 'conversion' ? 'on conversion' : 'moved by staff'}${c.direction === 'forward' && passed.length > 1 ? `, passing ${passed.length - 1} stage(s)` : ''}); progress ${str(payload.progress)}%`;
    }
    case 'application.module_updated': {
      const e = obj(payload.module_event);
      const change =
        e.kind === 'state'
          ? `${str(e.from_state)} -> ${str(e.to_state)}`
          : `${str(e.kind)}${e.kind === 'added' ? ` (${str(e.to_state)})` : ''}`;
      return `module ${str(e.key)} "${str(e.name)}": ${change}; progress ${str(payload.progress)}%`;
    }
    case 'application.module_details_saved':
      return `module ${str(d.module_key)} saved: name "${str(d.name)}", details ${JSON.stringify(d.details)}`;
    case 'application.status_changed':
      return `status ${str(d.from)} -> ${str(d.to)}`;
    case 'task.created':
      return `created "${str(d.title)}" for ${d.lead_id ? `lead ${str(d.lead_id)}` : `application ${str(d.application_id)}`}, due ${str(d.due_at)}, assignee ${str(obj(d.assignee).email)}`;
    case 'task.changed':
      return `changed: title "${str(d.title)}", due ${str(d.due_at)}, assignee ${str(obj(d.assignee).email)}`;
    case 'task.completed':
      return `completed at ${str(d.completed_at)}`;
    case 'task.reopened':
      return `reopened at ${str(d.reopened_at)}`;
    case 'task.overdue':
      return `overdue: due ${str(d.due_at)} passed while open`;
    case 'invoice.issued':
      return `issued ${str(payload.number)} for ${payload.lead_id ? `lead ${str(payload.lead_id)}` : `application ${str(payload.application_id)}`}: total ${str(payload.total)} ${str(payload.currency)} (minor units), due ${str(payload.due_date)}`;
    case 'payment.received':
      return `payment ${str(payload.id)} of ${str(payload.amount)} ${str(payload.currency)} (minor units) by ${str(payload.method)}${payload.reference ? `, reference ${str(payload.reference)}` : ''}`;
    case 'refund.created': {
      const refund = obj(d.refund);
      return `refund ${str(refund.id)} of ${str(refund.amount)} ${str(refund.currency)} (minor units) from payment ${str(refund.payment_id)} created${refund.reason ? `: ${str(refund.reason)}` : ''}`;
    }
    case 'refund.paid':
      return `refund ${str(d.refund_id)} of ${str(payload.amount)} ${str(payload.currency)} (minor units) paid`;
    case 'document.received':
      return `received ${str(d.document_type)} "${str(d.filename)}" for ${d.lead_id ? `lead ${str(d.lead_id)}` : `application ${str(d.application_id)}`}: ${str(d.content_type)}, ${str(d.size)} bytes, sha256 ${str(d.checksum_sha256)}`;
    case 'document.uploaded':
      return `passed the virus scan at ${str(d.scanned_at)}; stored`;
    case 'document.infected':
      return `refused by the virus scan at ${str(d.scanned_at)}: ${str(d.signature)}; the file was deleted`;
    case 'document.rejected':
      return `rejected: ${str(d.reason)}`;
    case 'application.outcome':
      return `outcome ${str(d.outcome)}${d.previous_outcome ? ` (was ${str(d.previous_outcome)})` : ''}`;
    default: {
      // Other aggregates' events (the lead's): the facts beside the payload, and the changed fields it names.
      const { payload: _payload, ...facts } = d;
      const parts: string[] = [];
      if (Array.isArray(payload.changed_fields)) parts.push(`changed ${JSON.stringify(payload.changed_fields)}`);
      const stage = obj(payload.stage);
      if (typeof stage.key === 'string') parts.push(`stage ${stage.key}`);
      if (Object.keys(facts).length > 0) parts.push(JSON.stringify(facts));
      const text = parts.join('; ');
      return text.length > 300 ? `${text.slice(0, 297)}...` : text;
    }
  }
}

export interface HistoryEntry {
  at: string;
  revision: number;
  event_id: string;
  type: string;
  actor: Actor | undefined;
  actor_text: string;
  summary: string;
  tenant_id: string;
  sandbox: boolean;
  correlation_id: string | undefined;
  data: Data;
}

export function historyEntries(events: StoredEvent[]): HistoryEntry[] {
  return events.map((e) => ({
    at: e.createdAt.toISOString(),
    revision: e.revision,
    event_id: e.id,
    type: e.type,
    actor: e.metadata.actor,
    actor_text: actorText(e.metadata.actor),
    summary: eventSummary(e),
    tenant_id: e.tenantId,
    sandbox: e.sandbox,
    correlation_id: e.metadata.correlation_id,
    data: e.data,
  }));
}
