import { Type, type Static } from 'typebox';
import { Value } from 'typebox/value';
import { MetaField } from '../schemas/meta-field.js';
import { PLANS, SCOPES, StringEnum, VISA_TYPES } from '../shared/enums.js';

const Key = Type.String({ pattern: '^[a-z][a-z0-9_]{0,59}$' });
const Country = Type.String({ pattern: '^[A-Z]{2}$' });
const Bucket = Type.Object(
  { capacity: Type.Integer({ minimum: 1 }), refill_per_second: Type.Number({ exclusiveMinimum: 0 }) },
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
          role: StringEnum(['owner', 'admin', 'manager', 'counsellor'] as const),
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
    limits: Type.Optional(
      Type.Object(
        {
          monthly_leads: Type.Optional(Type.Union([Type.Integer({ minimum: 0 }), Type.Null()])),
          webhook_endpoints: Type.Optional(Type.Integer({ minimum: 0 })),
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
  constructor(readonly problems: string[]) {
    super(`The workspace definition has ${problems.length} problem(s):\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'DefinitionError';
  }
}

function duplicates(values: string[]): string[] {
  return [...new Set(values.filter((v, i) => values.indexOf(v) !== i))];
}

/** Checks shape and cross-references, throwing one DefinitionError that names every problem. */
export function validateDefinition(input: unknown): WorkspaceDefinition {
  const shapeProblems = Value.Errors(WorkspaceDefinition, input)
    .filter((e) => e.keyword !== 'boolean')
    .map((e) => {
      const where = e.instancePath === '' ? '(top level)' : e.instancePath.slice(1).replaceAll('/', '.');
      const extra = e.keyword === 'additionalProperties' ? `: ${JSON.stringify(e.params)}` : '';
      return `${where}: ${e.message}${extra}`;
    });
  if (shapeProblems.length > 0) throw new DefinitionError(shapeProblems);
  const def = input as WorkspaceDefinition;
  const problems: string[] = [];
  const branchCodes = def.branches.map((b) => b.code);
  for (const code of duplicates(branchCodes)) problems.push(`branches: code ${code} appears more than once`);
  const emails = def.users.map((u) => u.email.toLowerCase());
  for (const email of duplicates(emails)) problems.push(`users: email ${email} appears more than once`);
  def.users.forEach((u, i) => {
    if (!branchCodes.includes(u.branch)) problems.push(`users.${i}.branch: no branch has the code ${u.branch}`);
  });
  if (!def.users.some((u) => u.role === 'owner' && u.active !== false))
    problems.push('users: at least one active owner is needed (owners are told when a webhook endpoint is paused)');
  const stageKeys = def.pipeline.stages.map((s) => s.key);
  for (const key of duplicates(stageKeys)) problems.push(`pipeline.stages: key ${key} appears more than once`);
  if (stageKeys.includes('converted')) problems.push('pipeline.stages: the key converted is reserved');
  const lost = def.pipeline.stages.filter((s) => s.lost);
  if (lost.length !== 1) problems.push(`pipeline.stages: exactly one stage must be marked lost, found ${lost.length}`);
  if (def.pipeline.stages[0]?.lost)
    problems.push('pipeline.stages: the first stage (where new leads start) cannot be the lost stage');
  for (const key of duplicates(def.lost_reasons.map((r) => r.key)))
    problems.push(`lost_reasons: key ${key} appears more than once`);
  for (const key of duplicates((def.sources ?? []).map((s) => s.key)))
    problems.push(`sources: key ${key} appears more than once`);
  def.custom_fields.forEach((field, i) => {
    if (!field.key || !/^[a-z][a-z0-9_]{0,59}$/.test(field.key))
      problems.push(`custom_fields.${i}.key: a key matching ^[a-z][a-z0-9_]{0,59}$ is needed`);
    if (!field.label) problems.push(`custom_fields.${i}.label: a label is needed`);
    if (!field.type) problems.push(`custom_fields.${i}.type: a type is needed`);
    if (field.type === 'dropdown' && (field.options ?? []).length === 0)
      problems.push(`custom_fields.${i}.options: a dropdown needs options`);
  });
  for (const key of duplicates(def.custom_fields.map((f) => f.key ?? '')))
    if (key) problems.push(`custom_fields: key ${key} appears more than once`);
  const captcha = def.widget.captcha;
  if (captcha.provider !== 'none' && !captcha.site_key)
    problems.push(`widget.captcha.site_key: the ${captcha.provider} provider needs a site key`);
  const workflow = def.application_workflow;
  if (workflow) {
    const appStages = workflow.stages.map((s) => s.key);
    for (const key of duplicates(appStages))
      problems.push(`application_workflow.stages: key ${key} appears more than once`);
    for (const key of duplicates(workflow.modules.map((m) => m.key)))
      problems.push(`application_workflow.modules: key ${key} appears more than once`);
    workflow.modules.forEach((m, i) => {
      for (const stage of m.stages)
        if (!appStages.includes(stage))
          problems.push(`application_workflow.modules.${i}.stages: no stage has the key ${stage}`);
    });
  }
  if (problems.length > 0) throw new DefinitionError(problems);
  return def;
}
