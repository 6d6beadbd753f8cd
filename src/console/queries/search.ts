import { parsePhoneNumberFromString, type CountryCode } from 'libphonenumber-js/max';
import type { Queryable } from '../../storage/postgres.js';
import { likePattern } from './leads.js';

/*
 * The header's search box. Leads are found by every word of the query somewhere in their name, email or phone (any
 * order), accents and case ignored, through migration 181's trigram index; a query that looks like a phone is read as
 * one number and searched by its national significant number, so the national prefix typed or not finds the same
 * lead. Each kind answers at most LIMIT rows, unordered by recency: ordering a common name's thousands of matches
 * would read them all (docs/benchmarks.md, "Search box").
 */

export const SEARCH_LIMIT = 20;

/**
 * The searched text of a lead, exactly as migration 220's leads_console_search is built over it (or the index is not
 * used): over the stored `full_name` column, not `body`, so the index does not keep a lead's updates from being HOT.
 */
const LEAD_TEXT = `console_fold(coalesce(full_name, '') || ' ' || coalesce(email, '') || ' ' || coalesce(phone, ''))`;
/** A task's title, exactly as migration 181's index is built over it. */
const TASK_TEXT = `console_fold(coalesce(body->>'title', ''))`;

/** What a query asks for: the words (each at least one character, lowercased), or a phone's digits. */
export interface SearchTerms {
  /** Words to find, each somewhere in the text: three characters or more use the index, shorter ones only filter. */
  words: string[];
  /** The digits a phone-like query stands for (its national significant number when it parses as a number). */
  phoneDigits: string | null;
  /** The number in E.164 when the query is a whole valid number: looked up exactly, through leads_phone. */
  phoneE164: string | null;
  /** The whole query, trimmed, for numbers (case and invoice). */
  whole: string;
}

/** Phone-like: digits with the separators and prefix people type, nothing else. */
const PHONE_LIKE = /^[+\d\s().-]+$/;

/**
 * The query's terms. A phone is read with the workspace's default country: `09876543210`, `+91 98765 43210` and
 * `98765 43210` all stand for 9876543210; a part of a number that does not parse is its digits without a leading zero
 * (the national prefix).
 */
export function searchTerms(query: string, defaultCountry: string): SearchTerms {
  const whole = query.trim().slice(0, 100);
  const words = whole
    .split(/\s+/)
    .filter(Boolean)
    .map((w) => w.toLowerCase());
  let phoneDigits: string | null = null;
  let phoneE164: string | null = null;
  if (PHONE_LIKE.test(whole)) {
    const digits = whole.replace(/\D/g, '');
    const parsed = parsePhoneNumberFromString(whole, { defaultCountry: defaultCountry as CountryCode });
    // A part that does not parse loses one leading zero, the national prefix (two would be an international one).
    const national = parsed?.isPossible() ? String(parsed.nationalNumber) : digits.replace(/^0(?!0)/, '');
    if (national.length >= 3) phoneDigits = national;
    if (parsed?.isValid()) phoneE164 = parsed.number;
  }
  return { words, phoneDigits, phoneE164, whole };
}

/** Whether the terms can be searched through an index: one word of three characters or more, or a phone. */
export const searchable = (t: SearchTerms) =>
  t.phoneE164 !== null || t.phoneDigits !== null || t.words.some((w) => w.length >= 3);

export interface LeadHit {
  id: string;
  full_name: string;
  phone: string | null;
  email: string | null;
  stage: string;
}

/** Live leads whose name, email and phone hold every word (or the phone's digits), at most `limit`. */
export async function searchLeads(
  sql: Queryable,
  tenantId: string,
  terms: SearchTerms,
  limit = SEARCH_LIMIT,
): Promise<LeadHit[]> {
  const values: unknown[] = [tenantId];
  const where = ['tenant_id = $1', 'sandbox = false'];
  const add = (fragment: (n: string) => string, value: unknown) => {
    values.push(value);
    where.push(fragment(`$${values.length}`));
  };
  // A whole number is one row of leads_phone; a part of one is searched among the digits of every phone (trigrams).
  if (terms.phoneE164) add((n) => `phone = ${n}`, terms.phoneE164);
  else if (terms.phoneDigits) add((n) => `${LEAD_TEXT} LIKE console_fold(${n})`, likePattern(terms.phoneDigits));
  else
    for (const word of terms.words) {
      // A word under three characters has no trigram: strpos keeps it a filter, so the index answers the others.
      if (word.length >= 3) add((n) => `${LEAD_TEXT} LIKE console_fold(${n})`, likePattern(word));
      else add((n) => `strpos(${LEAD_TEXT}, console_fold(${n})) > 0`, word);
    }
  values.push(limit);
  const result = await sql.query<LeadHit>(
    `SELECT id, coalesce(body->>'full_name', '') AS full_name, phone, email, body->'stage'->>'name' AS stage
       FROM leads WHERE ${where.join(' AND ')} LIMIT $${values.length}`,
    values,
  );
  return result.rows.sort((a, b) => a.full_name.localeCompare(b.full_name));
}

export interface CaseHit {
  id: string;
  case_ref: string;
  full_name: string;
}

/** Applications by case reference (any part, case ignored) or by number. */
export async function searchApplications(sql: Queryable, tenantId: string, terms: SearchTerms): Promise<CaseHit[]> {
  const number = /^\d{1,9}$/.test(terms.whole) ? Number(terms.whole) : null;
  const result = await sql.query<CaseHit>(
    `SELECT a.id, a.case_ref, coalesce(l.body->>'full_name', '') AS full_name
       FROM applications a LEFT JOIN leads l ON l.id = a.lead_id AND l.tenant_id = a.tenant_id
      WHERE a.tenant_id = $1 AND a.sandbox = false AND (a.number = $2 OR lower(a.case_ref) LIKE $3)
      ORDER BY a.number DESC LIMIT $4`,
    [tenantId, number, likePattern(terms.whole), SEARCH_LIMIT],
  );
  return result.rows;
}

export interface InvoiceHit {
  id: string;
  number: string;
  status: string;
}

/** Invoices by number (any part, case ignored). */
export async function searchInvoices(sql: Queryable, tenantId: string, terms: SearchTerms): Promise<InvoiceHit[]> {
  const result = await sql.query<InvoiceHit>(
    `SELECT id, number, coalesce(body->>'status', '') AS status FROM invoices
      WHERE tenant_id = $1 AND sandbox = false AND lower(number) LIKE $2
      ORDER BY created_at DESC LIMIT $3`,
    [tenantId, likePattern(terms.whole), SEARCH_LIMIT],
  );
  return result.rows;
}

export interface TaskHit {
  id: string;
  title: string;
  status: string;
}

/** Tasks whose title holds every word, accents and case ignored. */
export async function searchTasks(sql: Queryable, tenantId: string, terms: SearchTerms): Promise<TaskHit[]> {
  const values: unknown[] = [tenantId];
  const where = ['tenant_id = $1', 'sandbox = false'];
  for (const word of terms.words) {
    values.push(word.length >= 3 ? likePattern(word) : word);
    where.push(
      word.length >= 3
        ? `${TASK_TEXT} LIKE console_fold($${values.length})`
        : `strpos(${TASK_TEXT}, console_fold($${values.length})) > 0`,
    );
  }
  values.push(SEARCH_LIMIT);
  const result = await sql.query<TaskHit>(
    `SELECT id, body->>'title' AS title, body->>'status' AS status FROM tasks
      WHERE ${where.join(' AND ')} LIMIT $${values.length}`,
    values,
  );
  return result.rows.sort((a, b) => a.title.localeCompare(b.title));
}

/** Text without accents and case, as console_fold makes it in the database, for what is searched in memory. */
export function fold(text: string): string {
  return text.normalize('NFKD').replace(/\p{M}/gu, '').toLowerCase();
}

/** Members whose name (or email) holds every word, accents and case ignored. */
export function searchMembers<T extends { name: string; email: string }>(
  members: readonly T[],
  terms: SearchTerms,
): T[] {
  const words = terms.words.map(fold);
  return members.filter((m) => {
    const text = fold(`${m.name} ${m.email}`);
    return words.length > 0 && words.every((w) => text.includes(w));
  });
}
