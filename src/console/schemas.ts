/**
 * The console's field schemas (TypeBox), for the `schema` of every console route: params, query strings and form
 * bodies arrive as text, so every field is a string schema with the words a member reads when it is refused
 * (`errorMessage`, shown by its field by the console's error handler: src/console/plugin.ts).
 *
 * Forms send every input, an empty one as '', and a repeated key (`?q=a&q=b`) as a list: a field declared as one
 * text refuses a list with a 400 page, never a 500. Unknown fields are ignored (not refused), as a browser may send a
 * button's name; the edge checks (src/http/edge-values.ts) refuse a NUL anywhere, known field or not.
 */
import { Type, type TObject, type TProperties, type TSchema, type TString } from 'typebox';
import { StringEnum } from '../shared/enums.js';

/** The words shown by a field whose value its schema refused. */
const says = (errorMessage: string) => ({ errorMessage });

// Control characters but tab and newline (and carriage return, which forms send with newline); DEL and C1 too.
const ONE_LINE = '^[^\\u0000-\\u001f\\u007f-\\u009f]*$';
const MULTI_LINE = '^[^\\u0000-\\u0008\\u000b\\u000c\\u000e-\\u001f\\u007f-\\u009f]*$';

export const SLUG_PATTERN = '^[a-z0-9][a-z0-9-]{1,62}$';

/** A workspace's slug in the path. */
export const Slug = Type.String({ pattern: SLUG_PATTERN, ...says('This is not the name of a workspace.') });

/** A record's id (any case; lowercased by the edge checks in paths and query strings). */
export const Uuid = Type.String({ format: 'uuid', ...says('This is not the id of a record.') });

export const SlugParams = Type.Object({ slug: Slug });
export const IdParams = Type.Object({ slug: Slug, id: Uuid });

export interface TextOptions {
  /** At most this many characters. */
  max: number;
  /** At least this many (default 1: an empty required field is refused). */
  min?: number;
  /** A textarea: newlines and tabs allowed. */
  multiline?: boolean;
  /** What the member reads when it is refused (default: says the length and that control characters are refused). */
  message?: string;
}

/** Text a member typed: no NUL or other control character (a multi-line field keeps newlines and tabs), bounded. */
export function Text(o: TextOptions): TString {
  const min = o.min ?? 1;
  const message =
    o.message ??
    (min > 0
      ? `Fill this in: at most ${o.max.toLocaleString('en')} characters, without control characters.`
      : `At most ${o.max.toLocaleString('en')} characters, without control characters.`);
  return Type.String({
    minLength: min,
    maxLength: o.max,
    pattern: o.multiline ? MULTI_LINE : ONE_LINE,
    ...says(message),
  });
}

/** Text that may be left empty or absent. */
export const OptionalText = (o: Omit<TextOptions, 'min'>) => Type.Optional(Text({ ...o, min: 0 }));

/** An email address (as the API's `email` format reads it), at most 254 characters. */
export const Email = Type.String({
  format: 'email',
  maxLength: 254,
  ...says('Enter an email address, such as priya@example.com.'),
});

/** A date and time as an `<input type="datetime-local">` sends it: `2026-11-26T09:30` (seconds optional). */
export const DateTimeLocal = Type.String({
  format: 'console-datetime-local',
  ...says('Enter a date and time that exists, such as 2026-11-26T09:30.'),
});

/** A datetime-local input that may be left empty. */
export const OptionalDateTimeLocal = Type.Optional(
  Type.String({
    format: 'console-datetime-local-or-empty',
    ...says('Enter a date and time that exists, such as 2026-11-26T09:30, or leave it empty.'),
  }),
);

/** A day as an `<input type="date">` sends it: `2026-11-26`. */
export const DateOnly = Type.String({
  format: 'console-date',
  ...says('Enter a date that exists, such as 2026-11-26.'),
});

/** A date input that may be left empty. */
export const OptionalDate = Type.Optional(
  Type.String({
    format: 'console-date-or-empty',
    ...says('Enter a date that exists, such as 2026-11-26, or leave it empty.'),
  }),
);

/** A checkbox: absent when unticked, its value (`on` unless the input names one) when ticked. */
export const Checkbox = Type.Optional(Type.String({ maxLength: 100, pattern: ONE_LINE, ...says('Tick it or not.') }));

/** An amount in major units as a member types it (`1500`, `1,500.50`); its currency's exponent is checked after. */
export const Money = Type.String({
  maxLength: 32,
  pattern: '^\\s*[0-9][0-9,]*(\\.[0-9]+)?\\s*$',
  ...says('Enter an amount such as 1500 or 1500.50.'),
});

/** One of a fixed list of values (a select or radio group). */
export function Choice<const T extends readonly string[]>(values: T, message = 'Choose one of the options.') {
  return StringEnum(values, says(message));
}

/** A field that may be sent once or several times (checkboxes sharing a name): use `listOf` to read it. */
export function Many<T extends TSchema>(item: T, max = 50) {
  return Type.Optional(
    Type.Union([item, Type.Array(item, { maxItems: max })], says(`Choose at most ${max}, from the options shown.`)),
  );
}

/** Every value of a `Many` field, as a list. */
export function listOf<T>(value: T | T[] | undefined): T[] {
  if (value === undefined) return [];
  return Array.isArray(value) ? value : [value];
}

/** The CSRF token every signed-in form carries (checked by the plugin before the schema). */
export const Csrf = Type.String({ maxLength: 200, pattern: ONE_LINE, ...says('This form has expired.') });

/** The body of a form with nothing but its CSRF token (a button). */
export const CsrfOnly = Type.Object({ _csrf: Csrf });

/** A form's body: its CSRF token and these fields. */
export function formBody<P extends TProperties>(fields: P): TObject<P & { _csrf: typeof Csrf }> {
  return Type.Object({ ...fields, _csrf: Csrf });
}

/** A form anyone may post without a session (sign-in, forgot, reset): no CSRF token. */
export function openFormBody<P extends TProperties>(fields: P): TObject<P> {
  return Type.Object(fields);
}

/** A query string's fields (all optional text unless declared otherwise). */
export function queryOf<P extends TProperties>(fields: P): TObject<P> {
  return Type.Object(fields);
}

// The formats the schemas above name, with real calendar and clock checks (registered by the console's validator).
const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const DATE_TIME_LOCAL = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2}))?$/;
const DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
const leap = (year: number) => year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);

function realDay(year: number, month: number, day: number): boolean {
  if (year < 1 || month < 1 || month > 12 || day < 1) return false;
  return day <= (month === 2 && leap(year) ? 29 : DAYS[month - 1]!);
}

/** `yyyy-mm-dd` naming a day of the calendar (no month 13, no 30 February). */
export function isFormDate(value: string): boolean {
  const m = DATE.exec(value);
  return m !== null && realDay(Number(m[1]), Number(m[2]), Number(m[3]));
}

/** `yyyy-mm-ddThh:mm` (or `:ss`) naming a real day and time of day (no hour 24 or 99, no minute 60). */
export function isFormDateTimeLocal(value: string): boolean {
  const m = DATE_TIME_LOCAL.exec(value);
  if (!m || !realDay(Number(m[1]), Number(m[2]), Number(m[3]))) return false;
  return Number(m[4]) <= 23 && Number(m[5]) <= 59 && Number(m[6] ?? 0) <= 59;
}

/** The console's own string formats, for its validator (src/console/plugin.ts). */
export const CONSOLE_FORMATS: Record<string, (value: string) => boolean> = {
  'console-date': isFormDate,
  'console-date-or-empty': (v) => v === '' || isFormDate(v),
  'console-datetime-local': isFormDateTimeLocal,
  'console-datetime-local-or-empty': (v) => v === '' || isFormDateTimeLocal(v),
};
