import type { EnglishTest, Lead, Qualification } from './lead.js';
import type { VisaType } from '../../shared/enums.js';
import { normaliseCountry } from './country.js';
import { checkCustomFields } from './custom-fields.js';
import { dateOfBirthProblem, testDateProblem } from './dates.js';
import { normaliseEmail } from './email.js';
import { normalisePhone } from './phone.js';
import type { LeadSettings } from './settings.js';

/** A LeadCreate body that passed the schema (types, lengths, ranges, enums, patterns, no unknown properties). */
export interface LeadCreateBody {
  full_name: string;
  phone?: string | null;
  email?: string | null;
  alt_phone?: string | null;
  city?: string | null;
  state?: string | null;
  country_interest?: string | null;
  visa_type?: VisaType | null;
  intake?: string | null;
  course?: string | null;
  date_of_birth?: string | null;
  highest_qualification?: Qualification | null;
  score_percent?: number | null;
  english_test?: EnglishTest | null;
  work_experience_years?: number | null;
  passport_available?: boolean | null;
  previous_refusals?: number | null;
  message?: string;
  utm?: Record<string, string> | null;
  landing_page_url?: string | null;
  custom_fields?: Record<string, unknown>;
  consent: boolean;
  captcha_token?: string;
  website?: string;
}

/** A submission in the form a lead stores it: trimmed, phones in E.164, email lower-cased, country upper-cased. */
export type LeadSubmission = Pick<
  Lead,
  | 'full_name'
  | 'phone'
  | 'alt_phone'
  | 'email'
  | 'city'
  | 'state'
  | 'country_interest'
  | 'visa_type'
  | 'intake'
  | 'course'
  | 'date_of_birth'
  | 'highest_qualification'
  | 'score_percent'
  | 'english_test'
  | 'work_experience_years'
  | 'passport_available'
  | 'previous_refusals'
  | 'utm'
  | 'landing_page_url'
  | 'custom_fields'
> & { message: string | null };

/** Trimmed text, with empty text read as absent. */
function text(value: string | null | undefined): string | null {
  if (value === null || value === undefined) return null;
  const trimmed = value.trim();
  return trimmed === '' ? null : trimmed;
}

/** One submission being checked: the body, the workspace's settings, the time, and where problems are written. */
interface Check {
  body: LeadCreateBody;
  settings: LeadSettings;
  now: Date;
  problems: Record<string, string>;
  /** False for a field the schema already refused (it reports one problem only). */
  ok: (field: string) => boolean;
}

/**
 * The checks the schema cannot make: phone and email formats, calendar dates, the country code, custom fields against
 * the workspace's, and that a phone or an email is given. Every problem lands in `problems`, keyed by field, in the
 * order of the fields here. `skip` names fields the schema already refused, so each field reports one problem.
 */
export function normaliseSubmission(
  body: LeadCreateBody,
  settings: LeadSettings,
  now: Date,
  problems: Record<string, string>,
  skip: ReadonlySet<string> = new Set(),
): LeadSubmission {
  const ok = (field: string) => !skip.has(field);
  const check: Check = { body, settings, now, problems, ok };
  const { phone, altPhone, email } = contact(check);
  const country = countryInterest(check);
  const dob = dateOfBirth(check);
  const englishTest = englishTestOf(check);
  const utm = utmOf(check);
  const custom = customFields(check);
  const fullName = ok('full_name') ? (text(body.full_name) ?? '') : '';
  if (ok('full_name') && fullName === '') problems.full_name = 'must not be blank';

  return {
    full_name: fullName,
    phone,
    alt_phone: altPhone,
    email,
    city: ok('city') ? text(body.city) : null,
    state: ok('state') ? text(body.state) : null,
    country_interest: country,
    visa_type: ok('visa_type') ? (body.visa_type ?? null) : null,
    intake: ok('intake') ? (body.intake ?? null) : null,
    course: ok('course') ? text(body.course) : null,
    date_of_birth: dob,
    highest_qualification: ok('highest_qualification') ? (body.highest_qualification ?? null) : null,
    score_percent: ok('score_percent') ? (body.score_percent ?? null) : null,
    english_test: englishTest,
    work_experience_years: ok('work_experience_years') ? (body.work_experience_years ?? null) : null,
    passport_available: ok('passport_available') ? (body.passport_available ?? null) : null,
    previous_refusals: ok('previous_refusals') ? (body.previous_refusals ?? null) : null,
    utm,
    landing_page_url: ok('landing_page_url') ? text(body.landing_page_url) : null,
    custom_fields: custom,
    message: ok('message') ? text(body.message) : null,
  };
}

/** The phones in E.164 and the email lower-cased; a phone or an email is required. */
function contact({ body, settings, problems, ok }: Check): {
  phone: string | null;
  altPhone: string | null;
  email: string | null;
} {
  const phoneField = (field: 'phone' | 'alt_phone'): string | null => {
    const raw = ok(field) ? text(body[field]) : null;
    if (raw === null) return null;
    const e164 = normalisePhone(raw, settings.default_phone_country);
    if (!e164)
      problems[field] =
        `is not a valid phone number (international format, or a ${settings.default_phone_country} number)`;
    return e164 ?? null;
  };
  const phone = phoneField('phone');
  const altPhone = phoneField('alt_phone');

  let email: string | null = null;
  const rawEmail = ok('email') ? text(body.email) : null;
  if (rawEmail !== null) {
    email = normaliseEmail(rawEmail) ?? null;
    if (!email) problems.email = 'is not a valid email address';
  }
  const phoneGiven = ok('phone') && text(body.phone) !== null;
  const emailGiven = ok('email') && text(body.email) !== null;
  if (!phoneGiven && !emailGiven && ok('phone') && ok('email')) {
    problems.phone = 'a phone or an email is required';
    problems.email = 'a phone or an email is required';
  }
  return { phone, altPhone, email };
}

function countryInterest({ body, problems, ok }: Check): string | null {
  const raw = ok('country_interest') ? text(body.country_interest) : null;
  if (raw === null) return null;
  const country = normaliseCountry(raw) ?? null;
  if (!country) problems.country_interest = 'must be an ISO 3166-1 alpha-2 country code';
  return country;
}

function dateOfBirth({ body, now, problems, ok }: Check): string | null {
  const dob = ok('date_of_birth') ? text(body.date_of_birth) : null;
  if (dob !== null) {
    const problem = dateOfBirthProblem(dob, now);
    if (problem) problems.date_of_birth = problem;
  }
  return dob;
}

function englishTestOf({ body, now, problems, ok }: Check): EnglishTest | null {
  if (!ok('english_test') || !body.english_test) return null;
  const englishTest = { ...body.english_test };
  if (englishTest.test_date !== undefined) {
    const problem = testDateProblem(englishTest.test_date, now);
    if (problem) problems['english_test.test_date'] = problem;
  }
  return englishTest;
}

/** UTM values trimmed, blank ones dropped; none left reads as no UTM at all. */
function utmOf({ body, ok }: Check): Record<string, string> | null {
  if (!ok('utm') || !body.utm) return null;
  const kept = Object.entries(body.utm).filter(([, v]) => v.trim() !== '');
  return kept.length > 0 ? Object.fromEntries(kept.map(([k, v]) => [k, v.trim()])) : null;
}

/** Custom fields checked against the workspace's (nulls dropped), and every required one present. */
function customFields({ body, settings, problems, ok }: Check): Record<string, unknown> {
  const custom: Record<string, unknown> = {};
  if (ok('custom_fields') && body.custom_fields) {
    for (const [key, value] of Object.entries(
      checkCustomFields(settings.custom_fields, body.custom_fields, problems),
    )) {
      if (value !== null) custom[key] = value;
    }
  }
  for (const field of settings.custom_fields) {
    if (field.required && field.key && custom[field.key] === undefined && !problems[`custom_fields.${field.key}`]) {
      problems[`custom_fields.${field.key}`] = 'is required';
    }
  }
  return custom;
}
