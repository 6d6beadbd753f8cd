import type { LeadSubmission } from './submission.js';

const DEGREES = new Set(['bachelors', 'masters', 'doctorate']);

/**
 * The score of a new lead, 0 to 100: how reachable and how ready to apply the enquirer looks. Points:
 * phone 15, email 10, visa type 10, country of interest 10, intake 10, course 5, highest qualification 10
 * (5 more for a degree), English test 15, passport available 10, two or more years of work experience 5;
 * minus 5 per previous refusal (at most 20). Documented in docs/decisions.md.
 */
export function scoreLead(
  s: Pick<
    LeadSubmission,
    | 'phone'
    | 'email'
    | 'visa_type'
    | 'country_interest'
    | 'intake'
    | 'course'
    | 'highest_qualification'
    | 'english_test'
    | 'passport_available'
    | 'work_experience_years'
    | 'previous_refusals'
  >,
): number {
  let score = 0;
  if (s.phone) score += 15;
  if (s.email) score += 10;
  if (s.visa_type) score += 10;
  if (s.country_interest) score += 10;
  if (s.intake) score += 10;
  if (s.course) score += 5;
  if (s.highest_qualification) score += DEGREES.has(s.highest_qualification) ? 15 : 10;
  if (s.english_test) score += 15;
  if (s.passport_available === true) score += 10;
  if ((s.work_experience_years ?? 0) >= 2) score += 5;
  score -= Math.min(20, 5 * (s.previous_refusals ?? 0));
  return Math.max(0, Math.min(100, score));
}
