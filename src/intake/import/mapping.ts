import { VISA_TYPES } from '../../shared/enums.js';
import { readBack } from '../../shared/formula-cells.js';

/** What a column of the file can give a lead: a LeadCreate field, or a part of the name. */
export const IMPORT_FIELDS = {
  full_name: 'Full name',
  first_name: 'First name',
  last_name: 'Last name',
  phone: 'Phone',
  alt_phone: 'Other phone',
  email: 'Email',
  city: 'City',
  state: 'State or region',
  country_interest: 'Country of interest (two letters, e.g. CA)',
  visa_type: 'Visa type',
  intake: 'Intake (YYYY-MM)',
  course: 'Course',
  date_of_birth: 'Date of birth (YYYY-MM-DD)',
  message: 'Notes (kept as the enquiry’s message)',
} as const;
export type ImportField = keyof typeof IMPORT_FIELDS;
export const IMPORT_FIELD_KEYS = Object.keys(IMPORT_FIELDS) as ImportField[];

/** Each column's field ('' for a column left out), in the file's column order. */
export type ColumnMapping = (ImportField | '')[];

/** Whose export a file's headers are, as recognised. */
export type Layout = 'pipedrive' | 'hubspot' | 'spreadsheet';
export const LAYOUT_NAMES: Record<Layout, string> = {
  pipedrive: 'a Pipedrive export (people or leads)',
  hubspot: 'a HubSpot contacts export',
  spreadsheet: 'a spreadsheet',
};

/** A header as compared: lower case, spaces collapsed, without Pipedrive's "Person - " prefix. */
const normal = (header: string) =>
  header
    .trim()
    .toLowerCase()
    .replace(/\s+/g, ' ')
    .replace(/^person - /, '');

/**
 * Headers as Pipedrive writes them in an export of people or of leads ("Person - Name", "Person - Phone - Work", …;
 * older exports drop the "Person - " prefix, which is removed before comparing).
 */
const PIPEDRIVE: Record<string, ImportField> = {
  name: 'full_name',
  'first name': 'first_name',
  'last name': 'last_name',
  phone: 'phone',
  'phone - work': 'phone',
  'phone - mobile': 'phone',
  'phone - home': 'phone',
  'phone - other': 'phone',
  email: 'email',
  'email - work': 'email',
  'email - home': 'email',
  'email - other': 'email',
  'postal address - city/town/village/locality': 'city',
  'postal address - state/county': 'state',
  notes: 'message',
};

/** Headers as HubSpot writes them in a contacts export ("Record ID", "First Name", "Phone Number", …). */
const HUBSPOT: Record<string, ImportField> = {
  'first name': 'first_name',
  'last name': 'last_name',
  email: 'email',
  'phone number': 'phone',
  'mobile phone number': 'phone',
  city: 'city',
  'state/region': 'state',
  message: 'message',
  'date of birth': 'date_of_birth',
};

/** Headers people give their own spreadsheet columns. */
const SPREADSHEET: Record<string, ImportField> = {
  name: 'full_name',
  'full name': 'full_name',
  'client name': 'full_name',
  'student name': 'full_name',
  'first name': 'first_name',
  'given name': 'first_name',
  'last name': 'last_name',
  surname: 'last_name',
  'family name': 'last_name',
  phone: 'phone',
  'phone number': 'phone',
  mobile: 'phone',
  'mobile number': 'phone',
  'contact number': 'phone',
  whatsapp: 'phone',
  'alternate phone': 'alt_phone',
  'other phone': 'alt_phone',
  email: 'email',
  'e-mail': 'email',
  'email address': 'email',
  city: 'city',
  state: 'state',
  'country of interest': 'country_interest',
  country: 'country_interest',
  destination: 'country_interest',
  'visa type': 'visa_type',
  visa: 'visa_type',
  intake: 'intake',
  course: 'course',
  'date of birth': 'date_of_birth',
  dob: 'date_of_birth',
  notes: 'message',
  note: 'message',
  message: 'message',
  comments: 'message',
};

/** Whose export the headers are: Pipedrive's "Person - …"/"Lead - …" columns, HubSpot's "Record ID" and names. */
export function recogniseLayout(headers: readonly string[]): Layout {
  const raw = headers.map((h) => h.trim().toLowerCase());
  if (raw.some((h) => /^(person|lead|organization|deal) - /.test(h) || h === 'phone - work' || h === 'email - work'))
    return 'pipedrive';
  const hubspot = [
    'record id',
    'phone number',
    'mobile phone number',
    'state/region',
    'lifecycle stage',
    'contact owner',
  ];
  if (raw.filter((h) => hubspot.includes(h)).length >= 2 || raw.includes('record id')) return 'hubspot';
  return 'spreadsheet';
}

/** The mapping proposed for a file: each header recognised as its layout writes it; a field taken once (phones, emails: more). */
export function proposeMapping(headers: readonly string[], layout: Layout): ColumnMapping {
  const table = layout === 'pipedrive' ? PIPEDRIVE : layout === 'hubspot' ? HUBSPOT : SPREADSHEET;
  const taken = new Set<ImportField>();
  const fieldOf = (header: string) => table[normal(header)] ?? SPREADSHEET[normal(header)];
  // A full name column makes first and last name columns (Pipedrive writes all three) redundant.
  const hasFullName = headers.some((h) => fieldOf(h) === 'full_name');
  return headers.map((header) => {
    const field = fieldOf(header);
    if (!field || (hasFullName && (field === 'first_name' || field === 'last_name'))) return '';
    // Several phone columns (work, mobile): the first filled one is the phone, the next the other phone; several
    // email columns: the first filled one.
    if (field !== 'phone' && field !== 'email' && taken.has(field)) return '';
    if (field === 'phone' && taken.has('phone') && taken.has('alt_phone')) return '';
    if (field === 'phone' && taken.has('phone')) taken.add('alt_phone');
    taken.add(field);
    return field;
  });
}

/** What a mapping lacks to make a lead: a name (a full name column, or a first or last name). */
export function missingColumns(mapping: ColumnMapping): string[] {
  const has = (f: ImportField) => mapping.includes(f);
  const missing: string[] = [];
  if (!has('full_name') && !has('first_name') && !has('last_name'))
    missing.push('a column for the name (Full name, or First name and Last name)');
  if (!has('phone') && !has('alt_phone') && !has('email'))
    missing.push('a column for the phone or the email (a lead needs one of them)');
  return missing;
}

/** Visa type as people write it ("Spouse dependent", "Student") as the API's key, when it names one. */
function visaTypeOf(cell: string): string {
  const key = cell
    .trim()
    .toLowerCase()
    .replace(/[\s/-]+/g, '_');
  return (VISA_TYPES as readonly string[]).includes(key) ? key : cell.trim();
}

/**
 * A row's cells as the LeadCreate body the API would be sent: the name from its column or first and last names, the
 * first filled phone as the phone and the next as the other phone, empty cells left out, text kept as written
 * (trimmed; never evaluated; a cell an export neutralised read back as it was: `readBack`). `consent` is what the member confirmed for the whole file.
 */
export function leadBodyOf(
  cells: readonly string[],
  mapping: ColumnMapping,
  consent: boolean,
): Record<string, unknown> {
  const values = new Map<ImportField, string[]>();
  mapping.forEach((field, column) => {
    const cell = readBack((cells[column] ?? '').trim());
    if (!field || cell === '') return;
    values.set(field, [...(values.get(field) ?? []), cell]);
  });
  const first = (f: ImportField) => values.get(f)?.[0];
  const body: Record<string, unknown> = {};
  const name = first('full_name') ?? [first('first_name'), first('last_name')].filter(Boolean).join(' ');
  body.full_name = name;
  const phones = [...(values.get('phone') ?? []), ...(values.get('alt_phone') ?? [])];
  if (phones[0] !== undefined) body.phone = phones[0];
  if (phones[1] !== undefined) body.alt_phone = phones[1];
  for (const field of ['email', 'city', 'state', 'country_interest', 'intake', 'course', 'date_of_birth'] as const) {
    const value = first(field);
    if (value !== undefined) body[field] = value;
  }
  const visa = first('visa_type');
  if (visa !== undefined) body.visa_type = visaTypeOf(visa);
  const message = values.get('message')?.join('\n');
  if (message !== undefined) body.message = message;
  body.consent = consent;
  return body;
}
