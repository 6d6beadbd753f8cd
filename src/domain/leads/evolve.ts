import type { LeadEvent } from './events.js';
import { LEAD_FIELDS, LeadEventType, type Lead } from './lead.js';

/** Exactly the Lead fields of a payload (dropping changed_fields and anything else a webhook carries beside them). */
export function leadFromPayload(payload: Lead | Record<string, unknown>): Lead {
  const lead: Record<string, unknown> = {};
  for (const field of LEAD_FIELDS) lead[field] = (payload as Record<string, unknown>)[field];
  return lead as unknown as Lead;
}

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
