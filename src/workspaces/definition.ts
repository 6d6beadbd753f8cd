import { Type, type Static } from 'typebox';
import { PAYLOAD_VERSIONS } from '../webhooks/versions/names.js';
import { Value } from 'typebox/value';
import { ROLES } from '../identity/permissions.js';
import { MetaField } from '../schemas/meta-field.js';
import { PLANS, SCOPES, StringEnum, VISA_TYPES } from '../shared/enums.js';
import { isTimeZone } from '../shared/time-zones.js';
import { DOCUMENT_CONTENT_TYPES, MAX_DOCUMENT_BYTES } from '../domain/documents/index.js';
import { PASSKEY_REQUIREMENTS } from './workspace.js';

const Key = Type.String({ pattern: '^[a-z][a-z0-9_]{0,59}$' });
const Country = Type.String({ pattern: '^[A-Z]{2}$' });
// Every integer has a maximum (a number past it would fail in PostgreSQL or JavaScript, not here): far above any
// workspace's need, and within both.
const MAX_BUCKET = 1_000_000;
const MAX_MONTHLY_LEADS = 1_000_000_000;
const MAX_WEBHOOK_ENDPOINTS = 10_000;
const Bucket = Type.Object(
  {
    capacity: Type.Integer({ minimum: 1, maximum: MAX_BUCKET }),
    refill_per_second: Type.Number({ exclusiveMinimum: 0, maximum: MAX_BUCKET }),
  },
  { additionalProperties: false },
);

/** The declarative file a workspace is created and changed from (`visa-crm workspace apply <file>`). */
export const WorkspaceDefinition = Type.Object(
  {
    slug: Type.String({ pattern: '^[a-z0-9][a-z0-9-]{1,62}$' }),
    name: Type.String({ minLength: 1, maxLength: 200 }),
    plan: StringEnum(PLANS),
    status: Type.Optional(StringEnum(['active', 'suspended'] as const)),
    default_phone_country: Country,
    /** The IANA time zone the console shows times in and reads typed dates in; UTC when never set. */
    time_zone: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
    branches: Type.Array(
      Type.Object(
        { code: Type.String({ pattern: '^[A-Z0-9][A-Z0-9_-]{0,19}$' }), name: Type.String({ minLength: 1 }) },
        { additionalProperties: false },
      ),
      { minItems: 1 },
    ),
    users: Type.Array(
      Type.Object(
        {
          name: Type.String({ minLength: 1 }),
          email: Type.String({ format: 'email' }),
          role: StringEnum(ROLES),
          branch: Type.String(),
          active: Type.Optional(Type.Boolean()),
        },
        { additionalProperties: false },
      ),
    ),
    pipeline: Type.Object(
      {
        stages: Type.Array(
          Type.Object(
            { key: Key, name: Type.String({ minLength: 1 }), lost: Type.Optional(Type.Boolean()) },
            { additionalProperties: false },
          ),
          { minItems: 2 },
        ),
      },
      { additionalProperties: false },
    ),
    lost_reasons: Type.Array(
      Type.Object({ key: Key, name: Type.String({ minLength: 1 }) }, { additionalProperties: false }),
      { minItems: 1 },
    ),
    sources: Type.Optional(
      Type.Array(Type.Object({ key: Key, name: Type.String({ minLength: 1 }) }, { additionalProperties: false })),
    ),
    custom_fields: Type.Array(MetaField),
    visa_types: Type.Array(StringEnum(VISA_TYPES), { uniqueItems: true }),
    countries: Type.Array(Country, { uniqueItems: true }),
    widget: Type.Object(
      {
        brand_color: Type.Union([Type.String({ pattern: '^#[0-9A-Fa-f]{6}$' }), Type.Null()]),
        logo_url: Type.Union([Type.String({ pattern: '^https://' }), Type.Null()]),
        consent_text: Type.String({ minLength: 1, maxLength: 2000 }),
        consent_text_version: Type.String({ minLength: 1, maxLength: 50 }),
        captcha: Type.Object(
          {
            provider: StringEnum(['turnstile', 'hcaptcha', 'recaptcha', 'none'] as const),
            site_key: Type.Union([Type.String(), Type.Null()]),
            /** The provider's secret for siteverify; stored encrypted. */
            secret: Type.Optional(Type.Union([Type.String(), Type.Null()])),
          },
          { additionalProperties: false },
        ),
      },
      { additionalProperties: false },
    ),
    application_workflow: Type.Optional(
      Type.Object(
        {
          stages: Type.Array(
            Type.Object({ key: Key, name: Type.String({ minLength: 1 }) }, { additionalProperties: false }),
            { minItems: 1 },
          ),
          modules: Type.Array(
            Type.Object(
              {
                key: Key,
                name: Type.String({ minLength: 1 }),
                stages: Type.Array(Key),
                counts_toward_progress: Type.Optional(Type.Boolean()),
                optional: Type.Optional(Type.Boolean()),
              },
              { additionalProperties: false },
            ),
          ),
        },
        { additionalProperties: false },
      ),
    ),
    /** The document types staff upload (passport, transcript, …); the defaults when absent (docs/decisions.md). */
    document_types: Type.Optional(
      Type.Array(
        Type.Object(
          {
            key: Key,
            name: Type.String({ minLength: 1 }),
            /** Bytes; 10 MiB when absent. */
            max_size_bytes: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_DOCUMENT_BYTES })),
            /** Every allowed content type when absent. */
            content_types: Type.Optional(
              Type.Array(StringEnum(DOCUMENT_CONTENT_TYPES), { minItems: 1, uniqueItems: true }),
            ),
          },
          { additionalProperties: false },
        ),
        { minItems: 1 },
      ),
    ),
    /** Whose sign-ins must use a passkey; absent keeps what the workspace has (an owner may set it in the console). */
    passkeys_required: Type.Optional(StringEnum(PASSKEY_REQUIREMENTS)),
    /** The Events API's payload version when a request names none; absent keeps what the workspace has. */
    payload_version: Type.Optional(StringEnum(PAYLOAD_VERSIONS)),
    limits: Type.Optional(
      Type.Object(
        {
          monthly_leads: Type.Optional(
            Type.Union([Type.Integer({ minimum: 0, maximum: MAX_MONTHLY_LEADS }), Type.Null()]),
          ),
          webhook_endpoints: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_WEBHOOK_ENDPOINTS })),
          rate: Type.Optional(
            Type.Object(
              {
                key: Type.Optional(Bucket),
                scopes: Type.Optional(Type.Record(StringEnum(SCOPES), Bucket)),
                widget: Type.Optional(Bucket),
              },
              { additionalProperties: false },
            ),
          ),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);
export type WorkspaceDefinition = Static<typeof WorkspaceDefinition>;

export class DefinitionError extends Error {
  readonly problems: string[];
  constructor(problems: string[]) {
    super(`The workspace definition has ${problems.length} problem(s):\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.problems = problems;
    this.name = 'DefinitionError';
  }
}

function duplicates(values: string[]): string[] {
  return [...new Set(values.filter((v, i) => values.indexOf(v) !== i))];
}

type Loose = Record<string, unknown>;
/** The objects of a list, however malformed the rest: rule checks run on whatever the file holds. */
const objects = (value: unknown): Loose[] =>
  Array.isArray(value) ? value.filter((v): v is Loose => typeof v === 'object' && v !== null) : [];
const text = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);
const texts = (values: unknown[]): string[] => values.filter((v): v is string => typeof v === 'string');
const field = (value: unknown, name: string): unknown =>
  typeof value === 'object' && value !== null ? (value as Loose)[name] : undefined;

/** One shape problem as a line; an enum problem lists the values allowed. */
function shapeProblem(error: { instancePath: string; message: string; keyword: string; params: unknown }): string {
  const where = error.instancePath === '' ? '(top level)' : error.instancePath.slice(1).replaceAll('/', '.');
  const allowed = field(error.params, 'allowedValues');
  const extra =
    error.keyword === 'additionalProperties'
      ? `: ${JSON.stringify(error.params)}`
      : error.keyword === 'enum' && Array.isArray(allowed)
        ? `: ${allowed.join(', ')}`
        : '';
  return `${where}: ${error.message}${extra}`;
}

/** The cross-reference rules, on whatever parts of the file have the shape they read (shape problems come apart). */
function ruleProblems(input: unknown): string[] {
  return [
    ...peopleProblems(input),
    ...pipelineProblems(input),
    ...duplicateKeyProblems(input, ['lost_reasons', 'sources', 'document_types']),
    ...customFieldProblems(input),
    ...captchaProblems(input),
    ...workflowProblems(input),
    ...timeZoneProblems(input),
  ];
}

/** Branch codes and user emails once each, every user in a branch, and an active owner. */
function peopleProblems(input: unknown): string[] {
  const problems: string[] = [];
  const branchCodes = texts(objects(field(input, 'branches')).map((b) => b.code));
  for (const code of duplicates(branchCodes)) problems.push(`branches: code ${code} appears more than once`);
  const users = objects(field(input, 'users'));
  const emails = texts(users.map((u) => u.email)).map((e) => e.toLowerCase());
  for (const email of duplicates(emails)) problems.push(`users: email ${email} appears more than once`);
  users.forEach((u, i) => {
    const branch = text(u.branch);
    if (branch !== undefined && !branchCodes.includes(branch))
      problems.push(`users.${i}.branch: no branch has the code ${branch}`);
  });
  if (!users.some((u) => u.role === 'owner' && u.active !== false))
    problems.push('users: at least one active owner is needed (owners are told when a webhook endpoint is paused)');
  return problems;
}

/** Stage keys once each and not the reserved one, exactly one lost stage, and not first. */
function pipelineProblems(input: unknown): string[] {
  const problems: string[] = [];
  const stages = objects(field(field(input, 'pipeline'), 'stages'));
  const stageKeys = texts(stages.map((s) => s.key));
  for (const key of duplicates(stageKeys)) problems.push(`pipeline.stages: key ${key} appears more than once`);
  if (stageKeys.includes('converted')) problems.push('pipeline.stages: the key converted is reserved');
  const lost = stages.filter((s) => s.lost === true);
  if (stages.length > 0 && lost.length !== 1)
    problems.push(`pipeline.stages: exactly one stage must be marked lost, found ${lost.length}`);
  if (stages[0]?.lost === true)
    problems.push('pipeline.stages: the first stage (where new leads start) cannot be the lost stage');
  return problems;
}

/** Each list's keys once each. */
function duplicateKeyProblems(input: unknown, lists: readonly string[]): string[] {
  return lists.flatMap((list) =>
    duplicates(texts(objects(field(input, list)).map((r) => r.key))).map(
      (key) => `${list}: key ${key} appears more than once`,
    ),
  );
}

function customFieldProblems(input: unknown): string[] {
  const problems: string[] = [];
  const customFields = objects(field(input, 'custom_fields'));
  customFields.forEach((f, i) => {
    const key = text(f.key);
    if (!key || !/^[a-z][a-z0-9_]{0,59}$/.test(key))
      problems.push(`custom_fields.${i}.key: a key matching ^[a-z][a-z0-9_]{0,59}$ is needed`);
    if (!f.label) problems.push(`custom_fields.${i}.label: a label is needed`);
    if (!f.type) problems.push(`custom_fields.${i}.type: a type is needed`);
    if (f.type === 'dropdown' && objects(f.options).length === 0 && !(Array.isArray(f.options) && f.options.length > 0))
      problems.push(`custom_fields.${i}.options: a dropdown needs options`);
  });
  for (const key of duplicates(texts(customFields.map((f) => f.key))))
    if (key) problems.push(`custom_fields: key ${key} appears more than once`);
  return problems;
}

function captchaProblems(input: unknown): string[] {
  const captcha = field(field(input, 'widget'), 'captcha');
  const provider = text(field(captcha, 'provider'));
  if (provider && provider !== 'none' && !field(captcha, 'site_key'))
    return [`widget.captcha.site_key: the ${provider} provider needs a site key`];
  return [];
}

/** Application stage and module keys once each, and every module's stages among the workflow's. */
function workflowProblems(input: unknown): string[] {
  const workflow = field(input, 'application_workflow');
  if (!workflow) return [];
  const problems: string[] = [];
  const appStages = texts(objects(field(workflow, 'stages')).map((s) => s.key));
  for (const key of duplicates(appStages))
    problems.push(`application_workflow.stages: key ${key} appears more than once`);
  const modules = objects(field(workflow, 'modules'));
  for (const key of duplicates(texts(modules.map((m) => m.key))))
    problems.push(`application_workflow.modules: key ${key} appears more than once`);
  modules.forEach((m, i) => {
    for (const stage of texts(Array.isArray(m.stages) ? m.stages : []))
      if (!appStages.includes(stage))
        problems.push(`application_workflow.modules.${i}.stages: no stage has the key ${stage}`);
  });
  return problems;
}

function timeZoneProblems(input: unknown): string[] {
  const zone = text(field(input, 'time_zone'));
  return zone !== undefined && !isTimeZone(zone)
    ? [`time_zone: ${zone} is not a time zone name (an IANA name such as Asia/Kolkata, or UTC)`]
    : [];
}

/** Checks shape and cross-references, throwing one DefinitionError that names every problem of both kinds. */
export function validateDefinition(input: unknown): WorkspaceDefinition {
  const problems = [
    ...Value.Errors(WorkspaceDefinition, input)
      .filter((e) => e.keyword !== 'boolean')
      .map(shapeProblem),
    ...ruleProblems(input),
  ];
  if (problems.length > 0) throw new DefinitionError(problems);
  return input as WorkspaceDefinition;
}
