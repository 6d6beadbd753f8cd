import type pg from 'pg';
import { reserialiseLeadRows } from '../../projections/lead-rows.js';

export const name = 'lead bodies written again by the one serialiser';

// Every stored lead body written again through leadJson, the API's serialiser, with the defaults of
// LEAD_FIELD_DEFAULTS for any field a body predates (src/projections/lead-rows.ts): rows stored before the
// serialiser wrote them (by touchLead's SQL, before 1ca2a26) become the serialiser's bytes. A migration that adds a
// field to the Lead does the same with its own `leadFields`; test/projections/lead-rows.test.ts fails until the last
// one lists the Lead's current fields.
export const sql = '';

/** The Lead's fields, in the spec's order, that the stored bodies have after this migration. */
export const leadFields = [
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
];

export async function run(client: pg.ClientBase): Promise<void> {
  await reserialiseLeadRows(client);
}
