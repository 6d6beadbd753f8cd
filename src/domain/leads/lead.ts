import type { VisaType } from '../../shared/enums.js';
import { streamName } from '../streams.js';

export type Qualification =
  'secondary' | 'higher_secondary' | 'diploma' | 'bachelors' | 'masters' | 'doctorate' | 'other';
export type Temperature = 'hot' | 'warm' | 'cold';

export interface EnglishTest {
  type: 'IELTS' | 'PTE' | 'TOEFL' | 'DUOLINGO';
  overall: number;
  listening?: number;
  reading?: number;
  writing?: number;
  speaking?: number;
  test_date?: string;
}

export interface Named {
  key: string;
  name: string;
}

export interface LeadOwner {
  id: string;
  name: string;
  email: string;
}

/** The public Lead shape: every field of the spec's table, always present, nothing else. */
export interface Lead {
  id: string;
  full_name: string;
  phone: string | null;
  alt_phone: string | null;
  email: string | null;
  city: string | null;
  state: string | null;
  country_interest: string | null;
  visa_type: VisaType | null;
  intake: string | null;
  course: string | null;
  date_of_birth: string | null;
  highest_qualification: Qualification | null;
  score_percent: number | null;
  english_test: EnglishTest | null;
  work_experience_years: number | null;
  passport_available: boolean | null;
  previous_refusals: number | null;
  source: Named;
  campaign: string | null;
  utm: Record<string, string> | null;
  landing_page_url: string | null;
  branch: { id: string; code: string };
  owner: LeadOwner | null;
  stage: Named;
  temperature: Temperature | null;
  score: number;
  next_follow_up_at: string | null;
  lost_reason: Named | null;
  converted: boolean;
  custom_fields: Record<string, unknown>;
  consent: { at: string; source: string } | null;
  created_at: string;
  updated_at: string;
  last_activity_at: string | null;
  stage_changed_at: string | null;
}

/** Marks a Lead field every lead payload has carried since the first lead event (it has no default). */
export const SINCE_FIRST: unique symbol = Symbol('since the first lead event');

/**
 * Every Lead field, in the spec's order, with the value a payload written before the field existed reads as
 * (`leadFromPayload` fills it in when evolving such an event, and the stored rows get it the same way:
 * src/projections/lead-rows.ts). A field added to Lead does not compile until it is listed here with that default.
 */
export const LEAD_FIELD_DEFAULTS: { readonly [F in keyof Lead]-?: Lead[F] | typeof SINCE_FIRST } = {
  id: SINCE_FIRST,
  full_name: SINCE_FIRST,
  phone: SINCE_FIRST,
  alt_phone: SINCE_FIRST,
  email: SINCE_FIRST,
  city: SINCE_FIRST,
  state: SINCE_FIRST,
  country_interest: SINCE_FIRST,
  visa_type: SINCE_FIRST,
  intake: SINCE_FIRST,
  course: SINCE_FIRST,
  date_of_birth: SINCE_FIRST,
  highest_qualification: SINCE_FIRST,
  score_percent: SINCE_FIRST,
  english_test: SINCE_FIRST,
  work_experience_years: SINCE_FIRST,
  passport_available: SINCE_FIRST,
  previous_refusals: SINCE_FIRST,
  source: SINCE_FIRST,
  campaign: SINCE_FIRST,
  utm: SINCE_FIRST,
  landing_page_url: SINCE_FIRST,
  branch: SINCE_FIRST,
  owner: SINCE_FIRST,
  stage: SINCE_FIRST,
  temperature: SINCE_FIRST,
  score: SINCE_FIRST,
  next_follow_up_at: SINCE_FIRST,
  lost_reason: SINCE_FIRST,
  converted: SINCE_FIRST,
  custom_fields: SINCE_FIRST,
  consent: SINCE_FIRST,
  created_at: SINCE_FIRST,
  updated_at: SINCE_FIRST,
  last_activity_at: SINCE_FIRST,
  stage_changed_at: SINCE_FIRST,
};

/** The Lead fields in the spec's order; lists and tests use it to check "every field, no others". */
export const LEAD_FIELDS = Object.keys(LEAD_FIELD_DEFAULTS) as readonly (keyof Lead)[];

/** The reserved stage a converted lead shows. */
export const CONVERTED_STAGE: Named = { key: 'converted', name: 'Converted' };

/** Event types of a lead stream. The first five are webhook kinds and carry `data.payload`; the rest are internal. */
export const LeadEventType = {
  created: 'lead.created',
  updated: 'lead.updated',
  assigned: 'lead.assigned',
  lost: 'lead.lost',
  converted: 'lead.converted',
  enquiryReceived: 'lead.enquiry_received',
  noteAdded: 'lead.note_added',
} as const;

export const LEAD_EVENT_TYPES: readonly string[] = Object.values(LeadEventType);

export function leadStream(leadId: string): string {
  return streamName('lead', leadId);
}
