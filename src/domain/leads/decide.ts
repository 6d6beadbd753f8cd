import type { Actor } from '../../events/types.js';
import { chooseBranch, chooseOwner } from './assignment.js';
import { checkCustomFields } from './custom-fields.js';
import { scoreLead } from './scoring.js';
import type { LeadSubmission } from './submission.js';
import { decideErasure } from './erase.js';
import { LeadRefusal } from './refusal.js';
import type { LeadConverted, LeadEnquiryReceived, LeadEvent } from './events.js';
import { CONVERTED_STAGE, LEAD_FIELDS, LeadEventType, type Lead, type Named, type Temperature } from './lead.js';
import { firstStage, lostStage, type LeadSettings, type PipelineStage } from './settings.js';

export interface CaptureCommand {
  /** The id a new lead gets. */
  leadId: string;
  submission: LeadSubmission;
  /** The lead of this workspace and mode the submission's phone or email already belongs to, if any. */
  existing: { lead: Lead; matchedOn: ('phone' | 'email')[] } | null;
  source: Named;
  consentSource: string;
  settings: LeadSettings;
  /** The emails (lower case) of the workspace's members who can sign in; absent: every member is taken to. */
  canSignIn?: ReadonlySet<string>;
  now: Date;
}

export type CaptureDecision =
  | { outcome: 'created'; lead: Lead; events: LeadEvent[] }
  | { outcome: 'duplicate'; lead: Lead; events: LeadEnquiryReceived[] };

/** A new lead, or an enquiry on the timeline of the lead the submission duplicates. */
export function decideCapture(c: CaptureCommand): CaptureDecision {
  const at = c.now.toISOString();
  const { message, ...fields } = c.submission;
  if (c.existing) {
    return {
      outcome: 'duplicate',
      lead: c.existing.lead,
      events: [
        {
          type: LeadEventType.enquiryReceived,
          data: { at, source: c.source, matched_on: c.existing.matchedOn, message, submission: fields },
        },
      ],
    };
  }
  const branch = chooseBranch(c.settings, fields.city);
  const owner = chooseOwner(c.settings, branch.id, c.leadId, (email) => c.canSignIn?.has(email) ?? true);
  const stage = firstStage(c.settings);
  const lead: Lead = {
    id: c.leadId,
    full_name: fields.full_name,
    phone: fields.phone,
    alt_phone: fields.alt_phone,
    email: fields.email,
    city: fields.city,
    state: fields.state,
    country_interest: fields.country_interest,
    visa_type: fields.visa_type,
    intake: fields.intake,
    course: fields.course,
    date_of_birth: fields.date_of_birth,
    highest_qualification: fields.highest_qualification,
    score_percent: fields.score_percent,
    english_test: fields.english_test,
    work_experience_years: fields.work_experience_years,
    passport_available: fields.passport_available,
    previous_refusals: fields.previous_refusals,
    source: c.source,
    campaign: fields.utm?.campaign ?? null,
    utm: fields.utm,
    landing_page_url: fields.landing_page_url,
    branch: { id: branch.id, code: branch.code },
    owner: owner ? { id: owner.id, name: owner.name, email: owner.email } : null,
    stage: { key: stage.key, name: stage.name },
    temperature: null,
    score: scoreLead(fields),
    next_follow_up_at: null,
    lost_reason: null,
    converted: false,
    custom_fields: fields.custom_fields,
    consent: { at, source: c.consentSource },
    created_at: at,
    updated_at: at,
    last_activity_at: at,
    stage_changed_at: null,
  };
  return { outcome: 'created', lead, events: [{ type: LeadEventType.created, data: { payload: lead, message } }] };
}

/** LeadPatch after the schema: every field optional. */
export interface LeadPatch {
  stage_key?: string;
  lost_reason_key?: string | null;
  temperature?: Temperature | null;
  next_follow_up_at?: string | null;
  owner_email?: string | null;
  custom_fields?: Record<string, unknown>;
  note?: string;
}

export interface UpdateCommand {
  lead: Lead;
  patch: LeadPatch;
  settings: LeadSettings;
  author: Actor;
  now: Date;
}

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/** Lead fields whose values differ, leaving out the two times every change moves. */
export function changedFields(before: Lead, after: Lead): string[] {
  return LEAD_FIELDS.filter((f) => f !== 'updated_at' && f !== 'last_activity_at' && !same(before[f], after[f]));
}

/** A PATCH checked against the lead and the workspace: what it changes, each part refused or accepted. */
interface CheckedPatch {
  /** The stage it moves to, if it names one. */
  target: PipelineStage | undefined;
  isLostNow: boolean;
  endsLost: boolean;
  movesToLost: boolean;
  lostReason: Named | undefined;
  /** The new owner (null: none), or undefined when the PATCH leaves the owner alone. */
  owner: Lead['owner'] | undefined;
  /** The lead's custom fields after the PATCH, or undefined when it names none. */
  customFields: Record<string, unknown> | undefined;
  note: string | undefined;
}

/**
 * The events of a PATCH, in order: lead.updated (fields other than the owner and a move to lost, with
 * changed_fields), lead.assigned (a new owner), lead.lost (a move to the lost stage), then lead.note_added.
 * Each public event carries the lead as it is after that event. Nothing changes, nothing is appended.
 */
export function decideUpdate(c: UpdateCommand): LeadEvent[] {
  refuseLockedStage(c.lead, c.patch);
  const checked = checkPatch(c);
  const at = c.now.toISOString();
  const touched = { updated_at: at, last_activity_at: at };
  const events: LeadEvent[] = [];
  let current = c.lead;

  // lead.updated: everything except the owner and a move into the lost stage.
  const updated = withUpdates(c.lead, c.patch, checked, at);
  const changed = changedFields(c.lead, updated);
  if (changed.length > 0) {
    events.push({ type: LeadEventType.updated, data: { payload: { ...updated, changed_fields: changed } } });
    current = updated;
  }

  if (checked.owner !== undefined && !same(checked.owner, current.owner)) {
    const assigned: Lead = { ...current, ...touched, owner: checked.owner };
    events.push({ type: LeadEventType.assigned, data: { payload: assigned, previous_owner: current.owner } });
    current = assigned;
  }

  if (checked.movesToLost && checked.target && checked.lostReason) {
    const lostLead: Lead = {
      ...current,
      ...touched,
      stage: { key: checked.target.key, name: checked.target.name },
      stage_changed_at: at,
      lost_reason: checked.lostReason,
    };
    events.push({ type: LeadEventType.lost, data: { payload: lostLead, previous_stage: current.stage } });
  }

  if (checked.note) events.push({ type: LeadEventType.noteAdded, data: { at, note: checked.note, author: c.author } });
  return events;
}

/**
 * A note on its own (the console's note form): it changes none of the lead's fields, so a converted lead takes it
 * too; the API's PATCH, whose note travels with field changes, keeps refusing a converted lead (lead_locked).
 */
export function decideNote(note: string, author: Actor, now: Date): LeadEvent[] {
  const text = note.trim();
  if (!text)
    throw new LeadRefusal('invalid', 'validation_failed', 'Some fields are invalid; see fields', {
      note: 'must not be blank',
    });
  if (text.length > 5000)
    throw new LeadRefusal('invalid', 'validation_failed', 'Some fields are invalid; see fields', {
      note: 'must be at most 5000 characters',
    });
  return [{ type: LeadEventType.noteAdded, data: { at: now.toISOString(), note: text, author } }];
}

/** A converted lead takes no change, and no PATCH moves a lead into the converted stage. */
function refuseLockedStage(lead: Lead, patch: LeadPatch): void {
  if (lead.converted)
    throw new LeadRefusal(
      'conflict',
      'lead_locked',
      'This lead was converted to an application and can no longer be changed',
    );
  if (patch.stage_key === CONVERTED_STAGE.key) {
    throw new LeadRefusal(
      'conflict',
      'stage_requires_conversion',
      'A lead becomes converted only by converting it to an application',
    );
  }
}

/** Every problem of the PATCH at once (one per field, in the fields' order), then the lost stage's need of a reason. */
function checkPatch({ lead, patch, settings }: UpdateCommand): CheckedPatch {
  const problems: Record<string, string> = {};
  const stages = settings.pipeline.stages;
  const target = patch.stage_key === undefined ? undefined : stages.find((s) => s.key === patch.stage_key);
  if (patch.stage_key !== undefined && !target) problems.stage_key = "is not a stage of this workspace's pipeline";
  const isLostNow = lead.stage.key === lostStage(settings)?.key;
  const endsLost = target ? target.lost : isLostNow;
  const lostReason = checkLostReason(patch, settings, endsLost, problems);
  const owner = checkOwner(patch, settings, lead, problems);
  const customFields = patchedCustomFields(patch, settings, lead, problems);
  const note = patch.note?.trim();
  if (patch.note !== undefined && !note) problems.note = 'must not be blank';
  if (Object.keys(problems).length > 0)
    throw new LeadRefusal('invalid', 'validation_failed', 'Some fields are invalid; see fields', problems);

  const movesToLost = Boolean(target?.lost && !isLostNow);
  if (endsLost && (movesToLost || patch.lost_reason_key !== undefined) && !lostReason) {
    throw new LeadRefusal('invalid', 'lost_reason_required', 'Moving a lead to the lost stage needs a lost_reason_key');
  }
  return { target, isLostNow, endsLost, movesToLost, lostReason, owner, customFields, note };
}

function checkLostReason(
  patch: LeadPatch,
  settings: LeadSettings,
  endsLost: boolean,
  problems: Record<string, string>,
): Named | undefined {
  if (patch.lost_reason_key === undefined || patch.lost_reason_key === null) return undefined;
  const lostReason = settings.lost_reasons.find((r) => r.key === patch.lost_reason_key);
  if (!lostReason) problems.lost_reason_key = 'is not a lost reason of this workspace';
  else if (!endsLost) problems.lost_reason_key = 'applies only to a lead moving to (or in) the lost stage';
  return lostReason;
}

function checkOwner(
  patch: LeadPatch,
  settings: LeadSettings,
  lead: Lead,
  problems: Record<string, string>,
): Lead['owner'] | undefined {
  if (patch.owner_email === null) return null;
  if (patch.owner_email === undefined) return undefined;
  const email = patch.owner_email.trim().toLowerCase();
  const user = settings.users.find(
    (u) => u.email === email && u.active && !u.pending && u.branch_id === lead.branch.id,
  );
  if (user) return { id: user.id, name: user.name, email: user.email };
  problems.owner_email = `is not an active user of the lead's branch ${lead.branch.code}`;
  return undefined;
}

/** The lead's custom fields with the PATCH's accepted values set and its nulls removed. */
function patchedCustomFields(
  patch: LeadPatch,
  settings: LeadSettings,
  lead: Lead,
  problems: Record<string, string>,
): Record<string, unknown> | undefined {
  if (patch.custom_fields === undefined) return undefined;
  const accepted = checkCustomFields(settings.custom_fields, patch.custom_fields, problems);
  const customFields = { ...lead.custom_fields };
  for (const [key, value] of Object.entries(accepted)) {
    if (value === null) delete customFields[key];
    else customFields[key] = value;
  }
  return customFields;
}

/** The lead after the PATCH's changes other than the owner and a move into the lost stage. */
function withUpdates(lead: Lead, patch: LeadPatch, checked: CheckedPatch, at: string): Lead {
  const updated: Lead = { ...lead, updated_at: at, last_activity_at: at };
  if (patch.temperature !== undefined) updated.temperature = patch.temperature;
  if (patch.next_follow_up_at !== undefined)
    updated.next_follow_up_at =
      patch.next_follow_up_at === null ? null : new Date(patch.next_follow_up_at).toISOString();
  if (checked.customFields) updated.custom_fields = checked.customFields;
  const { target } = checked;
  if (target && !target.lost && target.key !== lead.stage.key) {
    updated.stage = { key: target.key, name: target.name };
    updated.stage_changed_at = at;
    updated.lost_reason = null;
  }
  if (!checked.movesToLost && checked.isLostNow && checked.endsLost && checked.lostReason)
    updated.lost_reason = checked.lostReason;
  return updated;
}

/** lead.converted: the lead locked in the reserved converted stage, with the application it became. */
export function decideConversion(
  lead: Lead,
  application: { id: string; case_ref: string },
  now: Date,
): LeadConverted[] {
  if (lead.converted)
    throw new LeadRefusal('conflict', 'lead_locked', 'This lead was already converted to an application');
  const at = now.toISOString();
  const payload: Lead = {
    ...lead,
    converted: true,
    stage: { ...CONVERTED_STAGE },
    stage_changed_at: at,
    updated_at: at,
    last_activity_at: at,
  };
  return [
    {
      type: LeadEventType.converted,
      data: { payload, application: { id: application.id, case_ref: application.case_ref } },
    },
  ];
}

/**
 * The lead's commands as one decider input. `capture` on no lead creates one; on an existing lead (the one its phone
 * or email matched, `matchedOn`) it records an enquiry. Update, note, convert and erase need the lead.
 */
export type LeadCommand =
  | ({ type: 'capture'; matchedOn: ('phone' | 'email')[] } & Omit<CaptureCommand, 'existing'>)
  | ({ type: 'update' } & Omit<UpdateCommand, 'lead'>)
  | { type: 'note'; note: string; author: Actor; now: Date }
  | { type: 'convert'; application: { id: string; case_ref: string }; now: Date }
  | { type: 'erase'; now: Date };

/** decide(state, command) → events: the lead's decider, over the decisions above. */
export function decide(state: Lead | undefined, command: LeadCommand): LeadEvent[] {
  switch (command.type) {
    case 'capture':
      return decideCapture({ ...command, existing: state ? { lead: state, matchedOn: command.matchedOn } : null })
        .events;
    case 'update':
      return decideUpdate({ ...command, lead: existingLead(state) });
    case 'note':
      existingLead(state);
      return decideNote(command.note, command.author, command.now);
    case 'convert':
      return decideConversion(existingLead(state), command.application, command.now);
    case 'erase':
      return decideErasure(existingLead(state), command.now);
    default: {
      const unknown: never = command;
      throw new Error(`Unknown lead command ${JSON.stringify(unknown)}`);
    }
  }
}

function existingLead(state: Lead | undefined): Lead {
  if (!state) throw new LeadRefusal('not_found', 'not_found', 'No such lead');
  return state;
}
