import type { ApplicationEvent } from '../../domain/applications/types.js';
import type { DocumentEvent } from '../../domain/documents/types.js';
import { formatMinor, isCurrency } from '../../domain/invoices/money.js';
import type { InvoiceEvent } from '../../domain/invoices/types.js';
import type { LeadEvent } from '../../domain/leads/events.js';
import type { Lead } from '../../domain/leads/lead.js';
import type { TaskEvent } from '../../domain/tasks/types.js';
import type { EndpointEvent } from '../../domain/webhooks/endpoint.js';
import type { ListExportEvent } from '../../domain/exports/list-export.js';
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
      // By its name, as staff know their keys; the id only when the key has no name.
      return actor.key_name ? `API key "${actor.key_name}"` : `API key ${actor.key_id}`;
    case 'system':
      return `system (${actor.name})`;
  }
}

type Data = Record<string, unknown>;

/** What a summary may know beyond its event: the names of the record's stages, by key (from its opening event). */
export interface SummaryContext {
  stageNames?: ReadonlyMap<string, string>;
}
type Summarize = (data: Data, context: SummaryContext) => string;

/*
 * Readers of event data that never throw and never print structure: an event read back may lack a field (written
 * before the field existed, or erased), so every value is taken as it comes and only text and numbers are shown.
 */
const obj = (value: unknown): Data =>
  typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Data) : {};
const list = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);

/** A string, number or boolean as text; anything else (absent, null, an object, a list) as undefined. */
function scalar(value: unknown): string | undefined {
  if (typeof value === 'string') return value.trim() === '' ? undefined : value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return undefined;
}

const say = (value: unknown, otherwise = 'unknown'): string => scalar(value) ?? otherwise;
const words = (value: unknown, otherwise = 'unknown'): string => say(value, otherwise).replaceAll('_', ' ');
const quoted = (value: unknown, otherwise: string): string => {
  const text = scalar(value);
  return text === undefined ? otherwise : `"${text}"`;
};
const named = (value: unknown, otherwise = 'unknown'): string => say(obj(value).name, say(obj(value).key, otherwise));
const joined = (values: unknown[], otherwise = 'none'): string =>
  values
    .map((v) => scalar(v))
    .filter((v) => v !== undefined)
    .join(', ') || otherwise;

/** An endpoint's rate as "5 a second", or "no limit". */
const rate = (value: unknown): string => (typeof value === 'number' ? `${value} a second` : 'no limit');

/** An instant as "2026-11-26 15:40 UTC"; text that is no date as it is. */
function time(value: unknown): string {
  const text = scalar(value);
  if (text === undefined) return 'an unknown time';
  const date = typeof value === 'string' ? new Date(value) : new Date(NaN);
  return Number.isNaN(date.getTime()) ? text : `${date.toISOString().replace('T', ' ').slice(0, 16)} UTC`;
}

/** A person of the workspace (a lead's owner, a task's assignee) as "Name (email)". */
function person(value: unknown, otherwise: string): string {
  const { name, email } = obj(value);
  if (scalar(name) && scalar(email)) return `${say(name)} (${say(email)})`;
  return scalar(name) ?? scalar(email) ?? otherwise;
}

/** Minor units in major units with the currency ("1234.56 INR"); amounts or currencies that are not one, as stored. */
function money(amount: unknown, currency: unknown): string {
  const code = scalar(currency);
  if (typeof amount === 'number' && Number.isSafeInteger(amount) && code && isCurrency(code))
    return formatMinor(amount, code);
  return `${say(amount, 'an unknown amount')}${code ? ` ${code}` : ''} (minor units)`;
}

/** What a task, document or invoice is about: a lead or an application. */
const subjectOf = (data: Data): string =>
  scalar(data.lead_id)
    ? `lead ${say(data.lead_id)}`
    : scalar(data.application_id)
      ? `application ${say(data.application_id)}`
      : 'an unknown record';

const withMessage = (text: string, message: unknown): string =>
  scalar(message) ? `${text}. Message: ${say(message)}` : text;

/** The lead fields by the words the console shows them with. */
const LEAD_FIELD_LABELS: Record<keyof Lead, string> = {
  id: 'id',
  full_name: 'name',
  phone: 'phone',
  alt_phone: 'alternative phone',
  email: 'email',
  city: 'city',
  state: 'state',
  country_interest: 'country of interest',
  visa_type: 'visa type',
  intake: 'intake',
  course: 'course',
  date_of_birth: 'date of birth',
  highest_qualification: 'highest qualification',
  score_percent: 'score percentage',
  english_test: 'English test',
  work_experience_years: 'work experience',
  passport_available: 'passport',
  previous_refusals: 'previous refusals',
  source: 'source',
  campaign: 'campaign',
  utm: 'UTM tags',
  landing_page_url: 'landing page',
  branch: 'branch',
  owner: 'owner',
  stage: 'stage',
  temperature: 'temperature',
  score: 'score',
  next_follow_up_at: 'next follow-up',
  lost_reason: 'lost reason',
  converted: 'converted',
  custom_fields: 'custom fields',
  consent: 'consent',
  created_at: 'creation time',
  updated_at: 'last change',
  last_activity_at: 'last activity',
  stage_changed_at: 'time of the stage change',
};

/** Times that move with other changes: a change of them alone says nothing to a reader. */
const FOLLOWING_FIELDS: ReadonlySet<string> = new Set(['updated_at', 'last_activity_at', 'stage_changed_at']);

/** The fields whose new value a change names (the lead after the change has it); null where it has none. */
const LEAD_FIELD_VALUES: Partial<Record<keyof Lead, (lead: Data) => string | null>> = {
  stage: (lead) => (lead.stage ? named(lead.stage) : null),
  owner: (lead) => (lead.owner ? person(lead.owner, 'unknown') : null),
  temperature: (lead) => scalar(lead.temperature) ?? null,
  next_follow_up_at: (lead) => (scalar(lead.next_follow_up_at) ? time(lead.next_follow_up_at) : null),
  lost_reason: (lead) => (lead.lost_reason ? named(lead.lost_reason) : null),
};

const label = (field: string): string =>
  Object.hasOwn(LEAD_FIELD_LABELS, field) ? LEAD_FIELD_LABELS[field as keyof Lead] : field.replaceAll('_', ' ');

/** One changed field in words: its label, and its new value where a reader needs it ("stage to Contacted"). */
function fieldChange(field: string, lead: Data): string {
  const value = Object.hasOwn(LEAD_FIELD_VALUES, field) ? LEAD_FIELD_VALUES[field as keyof Lead] : undefined;
  if (!value) return label(field);
  const now = value(lead);
  return `${label(field)} to ${now ?? 'none'}`;
}

function leadUpdated(data: Data): string {
  // An erasure names the personal fields it emptied; which ones held a value is itself not for the timeline.
  if (data.erased_at !== undefined) return 'Personal data erased';
  const lead = obj(data.payload);
  const fields = list(lead.changed_fields).filter((f): f is string => typeof f === 'string');
  const changes = fields.filter((f) => !FOLLOWING_FIELDS.has(f)).map((f) => fieldChange(f, lead));
  return changes.length > 0 ? `Changed ${changes.join(', ')}` : 'Changed the lead';
}

const LEAD_SUMMARIES: Record<LeadEvent['type'], Summarize> = {
  'lead.created': (d) => {
    const lead = obj(d.payload);
    const owner = lead.owner ? `owner ${person(lead.owner, 'unknown')}` : 'no owner';
    return withMessage(`Created from source ${named(lead.source)} at stage ${named(lead.stage)}, ${owner}`, d.message);
  },
  'lead.updated': leadUpdated,
  'lead.assigned': (d) =>
    `Owner changed: ${person(d.previous_owner, 'no owner')} → ${person(obj(d.payload).owner, 'no owner')}`,
  'lead.lost': (d) =>
    `Marked lost: ${named(obj(d.payload).lost_reason, 'no reason given')} (was at stage ${named(d.previous_stage)})`,
  'lead.converted': (d) => `Converted to application ${say(obj(d.application).case_ref, say(obj(d.application).id))}`,
  'lead.enquiry_received': (d) =>
    withMessage(
      `Enquiry received again via ${named(d.source)}, matched on ${
        list(d.matched_on)
          .map((m) => scalar(m))
          .filter(Boolean)
          .join(' and ') || 'unknown fields'
      }`,
      d.message,
    ),
  'lead.note_added': (d) => (scalar(d.note) ? `Note: ${say(d.note)}` : 'Note added (its text was erased)'),
};

const STAGE_CAUSES: Record<string, string> = {
  modules: 'after module updates',
  conversion: 'on conversion',
  manual: 'moved by staff',
};

const progress = (payload: Data): string =>
  typeof payload.progress === 'number' ? `; progress ${payload.progress}%` : '';

/** A stage by its name: the name the case's stages give its key, else the key in words. */
const stageName = (key: unknown, context: SummaryContext): string => context.stageNames?.get(say(key)) ?? words(key);

function stageChanged(d: Data, context: SummaryContext): string {
  const payload = obj(d.payload);
  const change = obj(payload.stage_change);
  const to = scalar(obj(payload.stage).name) ?? stageName(change.to_stage_key, context);
  const passed = list(change.passed_stage_ids).length;
  const cause = Object.hasOwn(STAGE_CAUSES, say(d.cause)) ? STAGE_CAUSES[say(d.cause)] : 'moved by staff';
  const passing = change.direction === 'forward' && passed > 1 ? `, passing ${passed - 1} stage(s)` : '';
  const move = scalar(change.from_stage_key)
    ? `Stage ${stageName(change.from_stage_key, context)} → ${to}`
    : `Entered stage ${to}`;
  return `${move} (${words(change.direction, 'direction unknown')}, ${cause}${passing})${progress(payload)}`;
}

function moduleUpdated(d: Data): string {
  const payload = obj(d.payload);
  const e = obj(payload.module_event);
  const module = `Module ${quoted(e.name, quoted(e.key, quoted(d.module_key, 'unknown')))}`;
  const kind = scalar(e.kind) ?? scalar(d.kind);
  const change =
    kind === 'state'
      ? `${module} marked ${words(e.to_state)} (was ${words(e.from_state)})`
      : kind === 'selected'
        ? `${module} switched on`
        : kind === 'deselected'
          ? `${module} switched off`
          : kind === 'restored'
            ? `${module} restored as the roadmap has it`
            : kind === 'added'
              ? `${module} added (${words(e.to_state)})`
              : `${module} changed`;
  return `${change}${progress(payload)}`;
}

/** A module's details ("passport number A1234567, expiry 2031-05-01"): values that are text, the names of the rest. */
function details(value: unknown): string {
  const entries = Object.entries(obj(value)).map(([key, v]) => {
    const text = scalar(v);
    return text === undefined ? key.replaceAll('_', ' ') : `${key.replaceAll('_', ' ')} ${text.slice(0, 100)}`;
  });
  return entries.length > 0 ? `details ${entries.join(', ')}` : 'no details';
}

const APPLICATION_SUMMARIES: Record<ApplicationEvent['type'], Summarize> = {
  'application.opened': (d) => {
    const stages = list(d.stages).map((s) => named(s));
    const modules = list(d.modules).map((m) => `${named(m)}${obj(m).selected === false ? ' (switched off)' : ''}`);
    return `Opened ${say(d.case_ref)} from its lead, with stages ${joined(stages)} and modules ${joined(modules)}`;
  },
  'application.stage_changed': stageChanged,
  'application.module_updated': moduleUpdated,
  'application.module_details_saved': (d) =>
    `Saved module ${quoted(d.name, say(d.module_key))} (${say(d.module_key)}): ${details(d.details)}`,
  'application.status_changed': (d) => `Status changed: ${words(d.from)} → ${words(d.to)}`,
  'application.note_added': (d) => (scalar(d.note) ? `Note: ${say(d.note)}` : 'Note added (its text was erased)'),
  'application.outcome': (d) =>
    `Outcome recorded: ${words(d.outcome)}${scalar(d.previous_outcome) ? ` (was ${words(d.previous_outcome)})` : ''}`,
};

const TASK_SUMMARIES: Record<TaskEvent['type'], Summarize> = {
  'task.created': (d) =>
    `Created ${quoted(d.title, 'a task')} for ${subjectOf(d)}, due ${time(d.due_at)}, assigned to ${person(d.assignee, 'nobody')}`,
  'task.changed': (d) =>
    `Changed: now ${quoted(d.title, 'untitled')}, due ${time(d.due_at)}, assigned to ${person(d.assignee, 'nobody')}`,
  'task.completed': (d) => `Completed at ${time(d.completed_at)}`,
  'task.reopened': (d) => `Reopened at ${time(d.reopened_at)}`,
  'task.overdue': (d) => `Overdue: due ${time(d.due_at)} passed while open`,
};

const INVOICE_SUMMARIES: Record<InvoiceEvent['type'], Summarize> = {
  'invoice.issued': (d) => {
    const invoice = obj(d.payload);
    return `Issued ${say(invoice.number, 'an invoice')} for ${subjectOf(invoice)}: total ${money(invoice.total, invoice.currency)}, due ${say(invoice.due_date)}`;
  },
  'payment.received': (d) => {
    const payment = obj(d.payload);
    const reference = scalar(payment.reference) ? `, reference ${say(payment.reference)}` : '';
    return `Received payment ${say(payment.id, say(d.payment_id))} of ${money(payment.amount, payment.currency)} by ${words(payment.method, 'an unknown method')}${reference}`;
  },
  'refund.created': (d) => {
    const refund = obj(d.refund);
    const reason = scalar(refund.reason) ? `: ${say(refund.reason)}` : '';
    return `Refund ${say(refund.id)} of ${money(refund.amount, refund.currency)} from payment ${say(refund.payment_id)} created${reason}`;
  },
  'refund.paid': (d) => {
    const refund = obj(d.payload);
    return `Refund ${say(d.refund_id, say(refund.id))} of ${money(refund.amount, refund.currency)} paid out`;
  },
};

const DOCUMENT_SUMMARIES: Record<DocumentEvent['type'], Summarize> = {
  'document.received': (d) =>
    `Received ${words(d.document_type, 'a document')} ${quoted(d.filename, '(file name erased)')} for ${subjectOf(d)}: ${say(d.content_type)}, ${say(d.size)} bytes, SHA-256 ${say(d.checksum_sha256)}`,
  'document.uploaded': (d) => `Passed the virus scan at ${time(d.scanned_at)}; stored`,
  'document.infected': (d) =>
    `Refused by the virus scan at ${time(d.scanned_at)}: ${say(d.signature)}; the file was deleted`,
  'document.scan_failed': (d) =>
    `Set aside at ${time(d.failed_at)}: the virus scanner failed ${say(d.attempts, 'several')} time(s) (${say(d.reason, 'no reason given')}); the file was deleted`,
  'document.rejected': (d) => `Rejected: ${say(d.reason, '(reason erased)')}`,
};

const ENDPOINT_SUMMARIES: Record<EndpointEvent['type'], Summarize> = {
  'webhook_endpoint.created': (d) =>
    `Created for ${say(d.url)}${scalar(d.description) ? ` (${say(d.description)})` : ''}, subscribed to ${joined(list(d.events), 'no events')}`,
  'webhook_endpoint.changed': (d) =>
    `Changed to ${say(d.url)}${scalar(d.description) ? ` (${say(d.description)})` : ''}, subscribed to ${joined(list(d.events), 'no events')}`,
  'webhook_endpoint.deleted': () => 'Deleted',
  'webhook_endpoint.paused': (d) =>
    `Paused after ${say(d.consecutive_failures, 'repeated')} failed deliveries in a row: ${say(d.reason, 'no reason given')}`,
  'webhook_endpoint.resumed': () => 'Resumed',
  'webhook_endpoint.secret_rotated': (d) =>
    `Signing secret rotated; the previous one stays valid until ${time(d.previous_secret_valid_until)}`,
  'webhook_endpoint.version_changed': (d) =>
    `Payload version changed from ${say(d.previous_payload_version)} to ${say(d.payload_version)}`,
  'webhook_endpoint.rate_limit_changed': (d) =>
    `Rate limit changed from ${rate(d.previous_rate_limit_per_second)} to ${rate(d.rate_limit_per_second)}`,
  'webhook.test': () => 'Test delivery sent',
};

const EXPORT_SUMMARIES: Record<ListExportEvent['type'], Summarize> = {
  'list.exported': (d) =>
    `Exported ${say(d.count, 'some')} row(s) of the ${words(d.list, 'a')} list as CSV (${scalar(d.filter) ? `filter ${say(d.filter)}` : 'no filter'}; ${words(d.scope, 'filter')})`,
};

/** Every event type the service appends, each with its summary; the compiler checks that none is left out. */
const SUMMARIES: Record<string, Summarize> = {
  ...LEAD_SUMMARIES,
  ...APPLICATION_SUMMARIES,
  ...TASK_SUMMARIES,
  ...INVOICE_SUMMARIES,
  ...DOCUMENT_SUMMARIES,
  ...ENDPOINT_SUMMARIES,
  ...EXPORT_SUMMARIES,
};

/** The event types a summary is written for (tests check each against the domains' lists). */
export const SUMMARISED_EVENT_TYPES: readonly string[] = Object.keys(SUMMARIES);

/** The names of a case's stages by key, from its opening event's data (empty for any other event). */
export function stageNamesOf(opened: Pick<StoredEvent, 'type' | 'data'> | undefined): Map<string, string> {
  const names = new Map<string, string>();
  if (opened?.type !== 'application.opened') return names;
  for (const stage of list(obj(opened.data).stages)) {
    const { key, name } = obj(stage);
    if (scalar(key) && scalar(name)) names.set(say(key), say(name));
  }
  return names;
}

/** One line saying what an event did, in words, from the facts it stores (and what the context knows). */
export function eventSummary(event: Pick<StoredEvent, 'type' | 'data'>, context: SummaryContext = {}): string {
  const data = obj(event.data);
  if (Object.hasOwn(SUMMARIES, event.type)) return SUMMARIES[event.type]!(data, context);
  // A type this version does not know (an older or newer writer's): said without its data, which may be anything.
  return `Event ${say(event.type, 'of no type')} recorded`;
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
  const context = { stageNames: stageNamesOf(events.find((e) => e.type === 'application.opened')) };
  return events.map((e) => ({
    at: e.createdAt.toISOString(),
    revision: e.revision,
    event_id: e.id,
    type: e.type,
    actor: e.metadata.actor,
    actor_text: actorText(e.metadata.actor),
    summary: eventSummary(e, context),
    tenant_id: e.tenantId,
    sandbox: e.sandbox,
    correlation_id: e.metadata.correlation_id,
    data: e.data,
  }));
}
