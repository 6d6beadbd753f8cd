import type { LeadEvent } from './events.js';
import { LEAD_FIELD_DEFAULTS, LeadEventType, SINCE_FIRST, type Lead } from './lead.js';

/** Each field of a record and what a payload written before the field existed reads as (SINCE_FIRST: no default). */
export type FieldDefaults = Readonly<Record<string, unknown>>;

/**
 * Exactly the fields of `defaults` from a payload (dropping changed_fields and anything else a webhook carries beside
 * them), each missing one given its default: how a payload older than a field is read. Tests pass a second version of
 * the defaults to act out a field being added.
 */
export function recordReader<T>(defaults: FieldDefaults): (payload: T | Record<string, unknown>) => T {
  const fields = Object.entries(defaults);
  return (payload) => {
    const record: Record<string, unknown> = {};
    for (const [field, fallback] of fields) {
      const value = (payload as Record<string, unknown>)[field];
      record[field] = value === undefined && fallback !== SINCE_FIRST ? structuredClone(fallback) : value;
    }
    return record as T;
  };
}

/** The Lead of a payload or a stored row: its fields in the spec's order, a field it predates given its default. */
export const leadFromPayload = recordReader<Lead>(LEAD_FIELD_DEFAULTS);

/** The later of two instants in the Lead's ISO form (null counts as the earliest). */
function later(current: string | null, at: string): string {
  return current !== null && Date.parse(current) >= Date.parse(at) ? current : at;
}

/**
 * The lead after one of its events. Public events carry the whole Lead; timeline events move its activity time
 * forward, never back: an enquiry fixes its time before it waits for the lead's stream, so a PATCH that held the
 * stream meanwhile can land first with a later time.
 */
export function evolve(state: Lead | undefined, event: LeadEvent): Lead | undefined {
  switch (event.type) {
    case LeadEventType.created:
    case LeadEventType.updated:
    case LeadEventType.assigned:
    case LeadEventType.lost:
    case LeadEventType.converted:
      return leadFromPayload(event.data.payload);
    case LeadEventType.enquiryReceived:
    case LeadEventType.noteAdded: {
      if (!state) return state;
      const at = event.data.at;
      return { ...state, last_activity_at: later(state.last_activity_at, at), updated_at: later(state.updated_at, at) };
    }
    default: {
      const unknown: never = event;
      throw new Error(`Unknown lead event ${JSON.stringify(unknown)}`);
    }
  }
}

/** The lead its events describe; events read from the log go through toLeadEvent first. */
export function fold(events: readonly LeadEvent[]): Lead | undefined {
  return events.reduce<Lead | undefined>(evolve, undefined);
}
