import { Type, type Static, type TSchema } from 'typebox';
import { ENGLISH_TESTS, QUALIFICATIONS, StringEnum, TEMPERATURES, VISA_TYPES } from '../shared/enums.js';

/**
 * A primitive schema that also admits null, written as a type list (not anyOf) so a wrong value reports the real
 * problem ("must NOT have more than 32 characters") rather than "has the wrong type", and serialises fast.
 */
function Nullable<T extends TSchema>(schema: T, options: Record<string, unknown> = {}) {
  const raw = schema as unknown as Record<string, unknown>;
  const withNull: Record<string, unknown> = { ...raw, ...options, type: [raw.type, 'null'] };
  if (Array.isArray(raw.enum)) withNull.enum = [...(raw.enum as unknown[]), null];
  return Type.Unsafe<Static<T> | null>(withNull);
}

/** Output: an object or null (anyOf, which the response serialiser handles). */
const NullableObject = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

const KEY_PATTERN = '^[a-z][a-z0-9_]{0,59}$';
const dateTime = { format: 'date-time' };

export const EnglishTest = Type.Object(
  {
    type: StringEnum(ENGLISH_TESTS),
    overall: Type.Number(),
    listening: Type.Optional(Type.Number()),
    reading: Type.Optional(Type.Number()),
    writing: Type.Optional(Type.Number()),
    speaking: Type.Optional(Type.Number()),
    test_date: Type.Optional(Type.String({ description: 'YYYY-MM-DD, a real calendar day, not in the future' })),
  },
  { additionalProperties: false },
);

const UtmValue = Type.Optional(Type.String({ maxLength: 200 }));

/** Text that is not blank once trimmed (what the submission's rules read as given). */
const NOT_BLANK = { type: 'string', pattern: '\\S' };

/**
 * A phone or an email is required: one of them is a string with something besides white space. Written as anyOf so
 * generated clients and validators know it; `x-refusal` is how the answer names both fields (src/http/union-errors.ts).
 */
const PHONE_OR_EMAIL = {
  anyOf: [
    { required: ['phone'], properties: { phone: NOT_BLANK } },
    { required: ['email'], properties: { email: NOT_BLANK } },
  ],
  'x-refusal': { fields: ['phone', 'email'], message: 'a phone or an email is required' },
};

/** The body of POST /v1/leads, constraint for constraint as the spec's LeadCreate table. */
export const LeadCreate = Type.Object(
  {
    full_name: Type.String({ minLength: 1, maxLength: 120 }),
    phone: Type.Optional(
      Nullable(Type.String({ maxLength: 32 }), {
        description: 'normalised to E.164 with the workspace default country',
      }),
    ),
    email: Type.Optional(Nullable(Type.String(), { description: 'empty string allowed; trimmed and lower-cased' })),
    alt_phone: Type.Optional(Nullable(Type.String({ maxLength: 32 }))),
    city: Type.Optional(Nullable(Type.String({ maxLength: 120 }))),
    state: Type.Optional(Nullable(Type.String({ maxLength: 120 }))),
    country_interest: Type.Optional(Nullable(Type.String(), { description: 'ISO 3166-1 alpha-2, any case' })),
    visa_type: Type.Optional(Nullable(StringEnum(VISA_TYPES))),
    intake: Type.Optional(Nullable(Type.String({ pattern: '^[0-9]{4}-(0[1-9]|1[0-2])$' }))),
    course: Type.Optional(Nullable(Type.String({ maxLength: 200 }))),
    date_of_birth: Type.Optional(Nullable(Type.String(), { description: 'YYYY-MM-DD' })),
    highest_qualification: Type.Optional(Nullable(StringEnum(QUALIFICATIONS))),
    score_percent: Type.Optional(Nullable(Type.Number({ minimum: 0, maximum: 100 }))),
    english_test: Type.Optional(Nullable(EnglishTest)),
    work_experience_years: Type.Optional(Nullable(Type.Number({ minimum: 0, maximum: 60 }))),
    passport_available: Type.Optional(Nullable(Type.Boolean())),
    previous_refusals: Type.Optional(Nullable(Type.Integer({ minimum: 0, maximum: 20 }))),
    message: Type.Optional(Type.String({ maxLength: 2000 })),
    utm: Type.Optional(
      Nullable(
        Type.Object(
          { source: UtmValue, medium: UtmValue, campaign: UtmValue, term: UtmValue, content: UtmValue },
          { additionalProperties: false },
        ),
      ),
    ),
    landing_page_url: Type.Optional(Nullable(Type.String({ format: 'uri', maxLength: 2000 }))),
    custom_fields: Type.Optional(
      Type.Record(Type.String(), Type.Unknown(), { description: 'keys as listed by GET /v1/meta/fields' }),
    ),
    consent: Type.Boolean({
      const: true,
      description: 'must be true: without it the answer is 400 `consent_required` (or `validation_failed` with others)',
    }),
    captcha_token: Type.Optional(Type.String({ description: 'required with a public key' })),
    website: Type.Optional(Type.String({ description: 'honeypot: leave empty' })),
  },
  { additionalProperties: false, ...PHONE_OR_EMAIL },
);

export const LeadPatchBody = Type.Object(
  {
    stage_key: Type.Optional(Type.String({ pattern: KEY_PATTERN })),
    lost_reason_key: Type.Optional(Nullable(Type.String({ pattern: KEY_PATTERN }))),
    temperature: Type.Optional(Nullable(StringEnum(TEMPERATURES))),
    next_follow_up_at: Type.Optional(Nullable(Type.String(dateTime))),
    owner_email: Type.Optional(Nullable(Type.String({ format: 'email' }))),
    custom_fields: Type.Optional(
      Type.Record(Type.String(), Type.Unknown(), { description: 'merged per key; null removes a key' }),
    ),
    note: Type.Optional(Type.String({ minLength: 1, maxLength: 5000 })),
  },
  { additionalProperties: false },
);

const NamedObject = Type.Object({ key: Type.String(), name: Type.String() }, { additionalProperties: false });
const NullableString = Nullable(Type.String());
const NullableNumber = Nullable(Type.Number());

/** The public Lead: every field always present, no others. */
export const LeadSchema = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    full_name: Type.String({
      description:
        'empty once the lead was erased; an erased lead keeps its id, stage, source, branch, owner and times, with phone, alt_phone, email, city, state, date_of_birth, landing_page_url, utm and campaign null and custom_fields empty',
    }),
    phone: Nullable(Type.String(), { description: 'E.164' }),
    alt_phone: NullableString,
    email: NullableString,
    city: NullableString,
    state: NullableString,
    country_interest: Nullable(Type.String(), { description: 'ISO 3166-1 alpha-2' }),
    visa_type: Nullable(StringEnum(VISA_TYPES)),
    intake: Nullable(Type.String(), { description: 'YYYY-MM' }),
    course: NullableString,
    date_of_birth: Nullable(Type.String(), { description: 'YYYY-MM-DD' }),
    highest_qualification: Nullable(StringEnum(QUALIFICATIONS)),
    score_percent: NullableNumber,
    english_test: NullableObject(EnglishTest),
    work_experience_years: NullableNumber,
    passport_available: Nullable(Type.Boolean()),
    previous_refusals: Nullable(Type.Integer()),
    source: NamedObject,
    campaign: NullableString,
    utm: NullableObject(Type.Record(Type.String(), Type.String())),
    landing_page_url: NullableString,
    branch: Type.Object({ id: Type.String({ format: 'uuid' }), code: Type.String() }, { additionalProperties: false }),
    owner: NullableObject(
      Type.Object(
        { id: Type.String({ format: 'uuid' }), name: Type.String(), email: Type.String() },
        { additionalProperties: false },
      ),
    ),
    stage: NamedObject,
    temperature: Nullable(StringEnum(TEMPERATURES)),
    score: Type.Integer(),
    next_follow_up_at: Nullable(Type.String(), dateTime),
    lost_reason: NullableObject(NamedObject),
    converted: Type.Boolean(),
    custom_fields: Type.Record(Type.String(), Type.Unknown()),
    consent: NullableObject(
      Type.Object({ at: Type.String(dateTime), source: Type.String() }, { additionalProperties: false }),
    ),
    created_at: Type.String(dateTime),
    updated_at: Type.String(dateTime),
    last_activity_at: Nullable(Type.String(), dateTime),
    stage_changed_at: Nullable(Type.String(), dateTime),
  },
  { additionalProperties: false },
);

export const LeadCreated = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    status: Type.String({ description: 'stage key of the new lead' }),
    assigned_to: Nullable(Type.String(), { description: "the owner's email, or null when the lead has no owner" }),
    duplicate: Type.Boolean({ const: false }),
    test_mode: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);

export const LeadDuplicate = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    duplicate: Type.Boolean({ const: true }),
  },
  { additionalProperties: false },
);

export const LeadList = Type.Object(
  {
    data: Type.Array(LeadSchema),
    next_cursor: Nullable(Type.String(), { description: 'pass as cursor for the next page; null on the last page' }),
  },
  { additionalProperties: false },
);

export const LeadListQuery = Type.Object(
  {
    updated_since: Type.Optional(
      Type.String({ format: 'date-time', description: 'only leads updated at or after this instant' }),
    ),
    cursor: Type.Optional(Type.String({ maxLength: 200 })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 25 })),
  },
  { additionalProperties: false },
);

export type LeadListQuery = Static<typeof LeadListQuery>;

export const LeadIdParams = Type.Object({ id: Type.String({ format: 'uuid' }) }, { additionalProperties: false });

export const IdempotencyHeaders = Type.Object({
  'idempotency-key': Type.Optional(Type.String({ pattern: '^[A-Za-z0-9_.:-]{1,255}$' })),
});

/** What erasing a lead did (admin interface and `visa-crm leads erase --json`). */
export const LeadErasure = Type.Object(
  {
    lead_id: Type.String({ format: 'uuid' }),
    erased_at: Type.String({ format: 'date-time', description: 'when the person was erased (the first erasure)' }),
    erased_now: Type.Boolean({ description: 'false when the lead had been erased before: nothing was done again' }),
    streams: Type.Integer({
      description: "streams whose data key this call deleted: the lead's and its applications'",
    }),
    plaintext_events: Type.Integer({
      description: 'events written before personal data was encrypted, whose personal values stay in the log',
    }),
  },
  { additionalProperties: false },
);
export type LeadErasure = Static<typeof LeadErasure>;
