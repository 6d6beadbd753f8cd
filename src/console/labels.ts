import { parsePhoneNumberFromString } from 'libphonenumber-js/max';
import type { ApplicationEvent } from '../domain/applications/types.js';
import type { DocumentEvent } from '../domain/documents/types.js';
import type { InvoiceEvent } from '../domain/invoices/types.js';
import type { LeadEvent } from '../domain/leads/events.js';
import type { TaskEvent } from '../domain/tasks/types.js';
import type { EndpointEvent } from '../domain/webhooks/endpoint.js';
import type { VisaType } from '../shared/enums.js';
import type { WorkspaceSettings } from '../workspaces/workspace.js';

/*
 * The one place the console turns codes into the words people read: visa types, countries, branches, event kinds,
 * phones and stages. Every page calls these; the crawler (test/console/crawler.test.ts) fails on a raw code shown.
 */

const VISA_TYPE_NAMES: Record<VisaType, string> = {
  student: 'Student',
  work: 'Work',
  pr: 'Permanent residence',
  visitor: 'Visitor',
  spouse_dependent: 'Spouse or dependant',
  business: 'Business',
};

/** A visa type's name ("Spouse or dependant"); an unknown code in words, never as the code. */
export function visaTypeName(code: string | null | undefined): string {
  if (!code) return '—';
  return Object.hasOwn(VISA_TYPE_NAMES, code) ? VISA_TYPE_NAMES[code as VisaType] : sentence(code);
}

const regions = new Intl.DisplayNames(['en'], { type: 'region', fallback: 'none' });

/** A country's English name from its ISO 3166-1 alpha-2 code ("US" → "United States"). */
export function countryName(code: string | null | undefined): string {
  if (!code) return '—';
  const upper = code.toUpperCase();
  if (!/^[A-Z]{2}$/.test(upper)) return code;
  try {
    return regions.of(upper) ?? upper;
  } catch {
    return upper;
  }
}

/** A branch by its name; the code only when the workspace no longer has the branch. */
export function branchName(
  settings: Pick<WorkspaceSettings, 'branches'>,
  branch: { id?: string; code?: string; name?: string } | null | undefined,
): string {
  if (!branch) return '—';
  const known = settings.branches.find((b) => b.id === branch.id || (branch.code && b.code === branch.code));
  return known?.name ?? branch.name ?? branch.code ?? '—';
}

/** A phone as people of its country write it ("+91 98765 43210"); the text as stored when it is no valid number. */
export function phoneText(phone: string | null | undefined): string {
  if (!phone) return '—';
  const parsed = parsePhoneNumberFromString(phone);
  return parsed ? parsed.formatInternational() : phone;
}

type EventKind =
  | LeadEvent['type']
  | ApplicationEvent['type']
  | TaskEvent['type']
  | InvoiceEvent['type']
  | DocumentEvent['type']
  | EndpointEvent['type'];

const EVENT_KIND_NAMES: Record<EventKind, string> = {
  'lead.created': 'Lead created',
  'lead.updated': 'Lead changed',
  'lead.assigned': 'Owner changed',
  'lead.lost': 'Marked lost',
  'lead.converted': 'Converted to an application',
  'lead.enquiry_received': 'Enquiry received again',
  'lead.note_added': 'Note added',
  'application.opened': 'Application opened',
  'application.stage_changed': 'Stage changed',
  'application.module_updated': 'Module updated',
  'application.module_details_saved': 'Module details saved',
  'application.status_changed': 'Status changed',
  'application.outcome': 'Visa outcome recorded',
  'application.note_added': 'Note added',
  'task.created': 'Task created',
  'task.changed': 'Task changed',
  'task.completed': 'Task completed',
  'task.reopened': 'Task reopened',
  'task.overdue': 'Task overdue',
  'invoice.issued': 'Invoice issued',
  'payment.received': 'Payment received',
  'refund.created': 'Refund created',
  'refund.paid': 'Refund paid',
  'document.received': 'Document received',
  'document.uploaded': 'Document uploaded',
  'document.infected': 'Document refused: a virus was found',
  'document.scan_failed': 'Document scan failed',
  'document.rejected': 'Document rejected',
  'webhook_endpoint.created': 'Endpoint created',
  'webhook_endpoint.changed': 'Endpoint changed',
  'webhook_endpoint.deleted': 'Endpoint deleted',
  'webhook_endpoint.paused': 'Endpoint paused',
  'webhook_endpoint.resumed': 'Endpoint resumed',
  'webhook_endpoint.secret_rotated': 'Signing secret rotated',
  'webhook_endpoint.version_changed': 'Payload version changed',
  'webhook_endpoint.rate_limit_changed': 'Rate limit changed',
  'webhook.test': 'Test delivery',
};

/** An event kind in words ("lead.note_added" → "Note added"). */
export function eventKindName(kind: string): string {
  return Object.hasOwn(EVENT_KIND_NAMES, kind) ? EVENT_KIND_NAMES[kind as EventKind] : sentence(kind);
}

/** The event kinds the console names, for the crawler's check that none is shown raw. */
export const NAMED_EVENT_KINDS: readonly string[] = Object.keys(EVENT_KIND_NAMES);

/** A lead's stage, with "converted" said once: the reserved converted stage's own name already says it. */
export function stageText(lead: { stage: { key: string; name: string }; converted: boolean }): string {
  const saysConverted = lead.stage.key === 'converted' || /convert/i.test(lead.stage.name);
  return lead.converted && !saysConverted ? `${lead.stage.name} (converted)` : lead.stage.name;
}

/** A code in words, for a value the tables above do not name ("module_updated" → "Module updated"). */
function sentence(code: string): string {
  const text = code.replace(/^[a-z_]+\./, '').replaceAll('_', ' ');
  return text.charAt(0).toUpperCase() + text.slice(1);
}
