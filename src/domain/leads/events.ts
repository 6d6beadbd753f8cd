import type { Actor } from '../../events/types.js';
import { eventReader } from '../event-types.js';
import type { LeadSubmission } from './submission.js';
import { LeadEventType, type Lead, type LeadOwner, type Named } from './lead.js';

/*
 * The events of a lead stream. The five webhook kinds carry the Lead as it is after the event in `data.payload`
 * (docs/architecture.md, "Event data convention"); the two timeline events are internal and carry no payload.
 * Type aliases, not interfaces, so each is a `NewEvent` as it stands.
 */

export type LeadCreated = { type: typeof LeadEventType.created; data: { payload: Lead; message: string | null } };

export type LeadUpdated = {
  type: typeof LeadEventType.updated;
  /** `erased_at`: the update is the lead's erasure (src/domain/leads/erase.ts). */
  data: { payload: Lead & { changed_fields: string[] }; erased_at?: string };
};

export type LeadAssigned = {
  type: typeof LeadEventType.assigned;
  data: { payload: Lead; previous_owner: LeadOwner | null };
};

export type LeadLost = { type: typeof LeadEventType.lost; data: { payload: Lead; previous_stage: Named } };

export type LeadConverted = {
  type: typeof LeadEventType.converted;
  data: { payload: Lead; application: { id: string; case_ref: string } };
};

export type LeadEnquiryReceived = {
  type: typeof LeadEventType.enquiryReceived;
  data: {
    at: string;
    source: Named;
    matched_on: ('phone' | 'email')[];
    message: string | null;
    submission: Omit<LeadSubmission, 'message'>;
  };
};

export type LeadNoteAdded = {
  type: typeof LeadEventType.noteAdded;
  data: { at: string; note: string; author: Actor };
};

export type LeadEvent =
  LeadCreated | LeadUpdated | LeadAssigned | LeadLost | LeadConverted | LeadEnquiryReceived | LeadNoteAdded;

type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
/** LeadEventType names exactly the union's types: a type in one and not the other does not compile. */
const typesNamed: Same<(typeof LeadEventType)[keyof typeof LeadEventType], LeadEvent['type']> = true;
void typesNamed;

/** A lead event read from the log: its type checked against the lead stream's, its data as that event wrote it. */
export const toLeadEvent = eventReader<LeadEvent>(Object.values(LeadEventType), 'a lead');
