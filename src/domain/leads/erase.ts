import type { LeadUpdated } from './events.js';
import { LeadEventType, type Lead } from './lead.js';

/**
 * The personal fields of the public Lead and what each reads as once the person is erased (docs/decisions.md,
 * "Erasure"): identifying and free-text fields. `full_name` is a string in the spec's shape, so it becomes empty; the
 * others become null, custom fields an empty object. The event log seals the same fields (src/events/personal-fields.ts).
 */
export const PERSONAL_LEAD_FIELDS = [
  { name: 'full_name', erased: '' },
  { name: 'phone', erased: null },
  { name: 'alt_phone', erased: null },
  { name: 'email', erased: null },
  { name: 'city', erased: null },
  { name: 'state', erased: null },
  { name: 'date_of_birth', erased: null },
  { name: 'landing_page_url', erased: null },
  { name: 'utm', erased: null },
  { name: 'campaign', erased: null },
  { name: 'custom_fields', erased: {} },
] as const satisfies readonly { name: keyof Lead; erased: Lead[keyof Lead] }[];

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
