import type { LeadUpdated } from './events.js';
import { LeadEventType, type Lead } from './lead.js';

/** What a personal field reads as once the person is erased: empty text, null, an empty object or list. */
export type ErasedValue = null | string | Record<string, never> | never[];

/** A Lead field that is not the person's data: it stays as it is on erasure. */
const KEPT: unique symbol = Symbol('kept on erasure');

/**
 * Every field of the public Lead: what it reads as once the person is erased, or KEPT (docs/decisions.md,
 * "Erasure"). Identifying and free-text fields are personal: `full_name` is a string in the spec's shape, so it
 * becomes empty; the others become null, custom fields an empty object. Keyed by every Lead field, so a field added
 * to the Lead does not compile until it says which it is. The event log seals the same fields
 * (src/events/personal-fields.ts).
 */
const ON_ERASURE: { readonly [F in keyof Lead]-?: Lead[F] | typeof KEPT } = {
  // The personal ones first, in the order erasure names them (its changed_fields); a new one goes after them.
  full_name: '',
  phone: null,
  alt_phone: null,
  email: null,
  city: null,
  state: null,
  date_of_birth: null,
  landing_page_url: null,
  utm: null,
  campaign: null,
  custom_fields: {},
  id: KEPT,
  country_interest: KEPT,
  visa_type: KEPT,
  intake: KEPT,
  course: KEPT,
  highest_qualification: KEPT,
  score_percent: KEPT,
  english_test: KEPT,
  work_experience_years: KEPT,
  passport_available: KEPT,
  previous_refusals: KEPT,
  source: KEPT,
  branch: KEPT,
  owner: KEPT,
  stage: KEPT,
  temperature: KEPT,
  score: KEPT,
  next_follow_up_at: KEPT,
  lost_reason: KEPT,
  converted: KEPT,
  consent: KEPT,
  created_at: KEPT,
  updated_at: KEPT,
  last_activity_at: KEPT,
  stage_changed_at: KEPT,
};

/** The personal fields of the public Lead, in that order, and what each reads as once the person is erased. */
export const PERSONAL_LEAD_FIELDS: readonly { name: keyof Lead; erased: ErasedValue }[] = (
  Object.entries(ON_ERASURE) as [keyof Lead, ErasedValue | typeof KEPT][]
).flatMap(([name, erased]) => (erased === KEPT ? [] : [{ name, erased }]));

/** The lead with every personal field erased. */
export function erasedLead(lead: Lead): Lead {
  const erased: Lead = { ...lead };
  for (const field of PERSONAL_LEAD_FIELDS) Object.assign(erased, { [field.name]: structuredClone(field.erased) });
  return erased;
}

/**
 * Erasing a lead: one lead.updated carrying the lead with its personal fields erased (changed_fields names those
 * that held a value), so integrators learn to drop their copies, and `erased_at`. Allowed on a converted lead too.
 */
export function decideErasure(lead: Lead, now: Date): LeadUpdated[] {
  const at = now.toISOString();
  const after = { ...erasedLead(lead), updated_at: at };
  const changed = PERSONAL_LEAD_FIELDS.map((f) => f.name).filter(
    (name) => JSON.stringify(lead[name]) !== JSON.stringify(after[name]),
  );
  return [{ type: LeadEventType.updated, data: { payload: { ...after, changed_fields: changed }, erased_at: at } }];
}
