/**
 * Values at the edge: what every request part (body, query, path, headers) must hold before any handler sees it,
 * whatever its schema says. A value that PostgreSQL or JavaScript cannot keep as it was sent is refused here with
 * 400 `validation_failed` naming it, so nothing downstream can fail on it or store something else.
 */

import type { ErrorObject } from 'ajv';
import { explainUnions, unionRefusals, type AjvLike } from './union-errors.js';

/** An error in the shape of Ajv's, so the error handler names the field like any schema error. */
export interface EdgeProblem {
  keyword: 'text' | 'finite';
  instancePath: string;
  schemaPath: string;
  message: string;
  params: Record<string, never>;
}

const problem = (keyword: EdgeProblem['keyword'], instancePath: string, message: string): EdgeProblem => ({
  keyword,
  instancePath,
  schemaPath: '#',
  message,
  params: {},
});

// A NUL (PostgreSQL text and jsonb cannot hold it), or a UTF-16 surrogate without its partner (no UTF-8 encoding).
// eslint-disable-next-line no-control-regex -- finding NUL is the point
const UNENCODABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
// eslint-disable-next-line no-control-regex -- finding NUL is the point
const UNENCODABLE_ALL = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** What a string holds that cannot be stored, or undefined. */
export function textProblem(value: string): string | undefined {
  if (!UNENCODABLE.test(value)) return undefined;
  return value.includes('\u0000')
    ? 'a NUL character (U+0000), which is not allowed'
    : 'an unpaired UTF-16 surrogate (not a character), which is not allowed';
}

/** A name safe to show and to encode: NULs and unpaired surrogates written as `\u0000`-style escapes. */
export function printable(name: string): string {
  return name.replace(UNENCODABLE_ALL, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

const pointerToken = (key: string) => key.replace(/~/g, '~0').replace(/\//g, '~1');

/**
 * Every string (map keys included) holding a NUL or an unpaired surrogate, and every number that is not finite (JSON
 * numbers like `1e309` parse to Infinity), anywhere in a parsed value, as Ajv-like errors with JSON-pointer paths.
 * Iterative, so no nesting depth can exhaust the stack.
 */
export function valueProblems(root: unknown): EdgeProblem[] {
  const problems: EdgeProblem[] = [];
  const stack: [unknown, string][] = [[root, '']];
  while (stack.length > 0) {
    const [value, path] = stack.pop()!;
    if (typeof value === 'string') {
      const found = textProblem(value);
      if (found) problems.push(problem('text', path, `contains ${found}`));
    } else if (typeof value === 'number') {
      if (!Number.isFinite(value)) problems.push(problem('finite', path, 'must be a finite number'));
    } else if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--) stack.push([value[i], `${path}/${i}`]);
    } else if (value !== null && typeof value === 'object') {
      const entries = Object.entries(value);
      for (let i = entries.length - 1; i >= 0; i--) {
        const [key, child] = entries[i]!;
        const childPath = `${path}/${pointerToken(key)}`;
        const found = textProblem(key);
        if (found) problems.push(problem('text', childPath, `is a key containing ${found}`));
        else stack.push([child, childPath]);
      }
    }
  }
  return problems;
}

/** Whether `valueProblems` would find anything: the same walk, with no paths or problems built on the way. */
export function hasValueProblems(root: unknown): boolean {
  const stack: unknown[] = [root];
  while (stack.length > 0) {
    const value = stack.pop();
    if (typeof value === 'string') {
      if (UNENCODABLE.test(value)) return true;
    } else if (typeof value === 'number') {
      if (!Number.isFinite(value)) return true;
    } else if (Array.isArray(value)) {
      for (const item of value) stack.push(item);
    } else if (value !== null && typeof value === 'object') {
      for (const key of Object.keys(value)) {
        if (UNENCODABLE.test(key)) return true;
        stack.push((value as Record<string, unknown>)[key]);
      }
    }
  }
  return false;
}

/** A uuid in its canonical 8-4-4-4-12 hexadecimal form, any case (no `urn:uuid:` prefix, no braces). */
export const CANONICAL_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:[Zz]|([+-])(\d{2}):?(\d{2}))$/;

const DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
const leap = (year: number) => year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
const daysIn = (year: number, month: number) => (month === 2 && leap(year) ? 29 : DAYS[month - 1]!);

/** What the service accepts as a date-time, for the messages that refuse one. */
export const DATE_TIME_RULE =
  'must be a date-time like 2026-11-01T10:00:00Z or 2026-11-01T15:30:00+05:30: a time zone, no leap second, ' +
  'at most millisecond precision, and in UTC between the years 0001 and 9999';

/**
 * The instant (milliseconds since the epoch) of a date-time the service accepts, or undefined. The RFC 3339 form
 * (`T`, `t` or a space between date and time; `Z` or an offset, with or without its colon), a real calendar day and
 * time, no leap second (neither JavaScript nor the answers can show second 60), digits after the milliseconds only
 * when they are zeros (the service keeps milliseconds, so finer ones could not be read back), and an instant whose
 * UTC year is 0001 to 9999: what PostgreSQL's timestamptz holds and what the answers' `YYYY-MM-DDTHH:MM:SS.sssZ` form
 * can show. Computed here, not by `Date.parse`, which reads a space-separated `0099-…` as 1999.
 */
export function dateTimeInstant(value: string): number | undefined {
  const m = DATE_TIME.exec(value);
  if (!m) return undefined;
  const [year, month, day, hour, minute, second] = [1, 2, 3, 4, 5, 6].map((i) => Number(m[i]));
  const fraction = m[7] ?? '';
  if (month! < 1 || month! > 12 || day! < 1 || day! > daysIn(year!, month!)) return undefined;
  if (hour! > 23 || minute! > 59 || second! > 59) return undefined;
  if (!/^0*$/.test(fraction.slice(3))) return undefined;
  let offset = 0;
  if (m[8]) {
    const [oh, om] = [Number(m[9]), Number(m[10])];
    if (oh > 23 || om > 59) return undefined;
    offset = (m[8] === '-' ? -1 : 1) * (oh * 60 + om) * 60_000;
  }
  const local = new Date(0);
  local.setUTCFullYear(year!, month! - 1, day!);
  local.setUTCHours(hour!, minute!, second!, Number(fraction.slice(0, 3).padEnd(3, '0')));
  const instant = local.getTime() - offset;
  const utcYear = new Date(instant).getUTCFullYear();
  return utcYear < 1 || utcYear > 9999 ? undefined : instant;
}

export const isServiceDateTime = (value: string): boolean => dateTimeInstant(value) !== undefined;

interface Validator {
  (data: unknown): boolean;
  errors?: ErrorObject[] | null;
}

type Canonical = (value: string) => string;

/**
 * The top-level properties of an object schema whose values get one canonical form once valid: date-times become
 * `YYYY-MM-DDTHH:MM:SS.sssZ` (so whoever reads them with `new Date` gets the instant validated, whatever the form
 * sent), and with `lowercaseUuids` uuids are lowercased.
 */
function canonicalForms(schema: unknown, lowercaseUuids: boolean): [string, Canonical][] {
  const properties = (schema as { properties?: Record<string, { format?: unknown }> } | null)?.properties ?? {};
  const forms: [string, Canonical][] = [];
  for (const [name, property] of Object.entries(properties)) {
    if (property?.format === 'date-time') forms.push([name, (v) => new Date(dateTimeInstant(v)!).toISOString()]);
    if (property?.format === 'uuid' && lowercaseUuids) forms.push([name, (v) => v.toLowerCase()]);
  }
  return forms;
}

/**
 * A schema's validator (`compiled` gives it, compiled on its first call) that also refuses what `valueProblems` finds (listed first, so they name their field
 * before any schema error at the same place), and puts valid top-level date-times (and, with `lowercaseUuids`, for
 * path and query, uuids) in their canonical form: upper-case hex names the same uuid, and every layer behind (stream
 * names, logs, answers) sees the one form.
 */
export function withEdgeChecks(compiled: () => Validator, schema: unknown, lowercaseUuids: boolean) {
  const forms = canonicalForms(schema, lowercaseUuids);
  const refusals = unionRefusals(schema);
  const check = Object.assign(
    (data: unknown): boolean => {
      const validate = compiled();
      const valid = validate(data);
      const problems = hasValueProblems(data) ? valueProblems(data) : [];
      if (valid && problems.length === 0) {
        check.errors = null;
        const record = (data ?? {}) as Record<string, unknown>;
        for (const [name, canonical] of forms) {
          const value = record[name];
          if (typeof value === 'string') record[name] = canonical(value);
        }
        return true;
      }
      check.errors = [...problems, ...explainUnions(validate.errors ?? [], refusals)];
      return false;
    },
    { errors: null as (EdgeProblem | AjvLike)[] | null },
  );
  return check;
}
