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

/** The Lead fields in the spec's order; lists and tests use it to check "every field, no others". */
export const LEAD_FIELDS = [
  'id',
  'full_name',
  'phone',
  'alt_phone',
  'email',
  'city',
  'state',
  'country_interest',
  'visa_type',
  'intake',
  'course',
  'date_of_birth',
  'highest_qualification',
  'score_percent',
  'english_test',
  'work_experience_years',
  'passport_available',
  'previous_refusals',
  'source',
  'campaign',
  'utm',
  'landing_page_url',
  'branch',
  'owner',
  'stage',
  'temperature',
  'score',
  'next_follow_up_at',
  'lost_reason',
  'converted',
  'custom_fields',
  'consent',
  'created_at',
  'updated_at',
  'last_activity_at',
  'stage_changed_at',
] as const satisfies readonly (keyof Lead)[];

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
