import { MAX_MESSAGE_LINKS } from '../intake/spam.js';

/** The limits of one LeadCreate property that a browser can check before sending. */
export interface PropertyRule {
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  minimum?: number;
  maximum?: number;
  integer?: boolean;
}

export interface ClientRules {
  /** Read from the LeadCreate schema. */
  fields: Record<string, PropertyRule>;
  /** The longest UTM value the schema accepts. */
  utmMaxLength: number;
  /** What src/domain/leads/email.ts accepts, as one pattern (test/widget/form-rules.test.ts holds them equal). */
  emailPattern: string;
  /** The longest value of a text custom field (src/domain/leads/custom-fields.ts). */
  customTextMaxLength: number;
  /** The spam rules a person can trip by accident (src/intake/spam.ts): a link in the name, too many in the message. */
  linkPattern: string;
  maxMessageLinks: number;
}

export const EMAIL_PATTERN =
  "^(?![.])(?![^@]*[.][.])(?![^@]*[.]@)[A-Za-z0-9!#$%&'*+/=?^_`{|}~.-]{1,64}@(?=.{4,253}$)(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?[.])+[A-Za-z]{2,63}$";
export const CUSTOM_TEXT_MAX_LENGTH = 2000;
/** Case-insensitive. */
export const LINK_PATTERN = '(https?://|www[.])';

interface JsonSchema {
  type?: string | string[];
  anyOf?: JsonSchema[];
  properties?: Record<string, JsonSchema>;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  minimum?: number;
  maximum?: number;
}

/** `T | null` is written either as a type list or as anyOf [T, null]; the rule lives on T. */
function withoutNull(schema: JsonSchema): JsonSchema {
  return schema.anyOf?.find((member) => member.type !== 'null') ?? schema;
}

function ruleOf(schema: JsonSchema): PropertyRule {
  const s = withoutNull(schema);
  const rule: PropertyRule = {};
  for (const name of ['minLength', 'maxLength', 'pattern', 'minimum', 'maximum'] as const) {
    if (s[name] !== undefined) (rule as Record<string, unknown>)[name] = s[name];
  }
  if (s.type === 'integer' || (Array.isArray(s.type) && s.type.includes('integer'))) rule.integer = true;
  return rule;
}

/** Reads the browser-checkable limits out of the server's LeadCreate schema, so the form cannot drift from it. */
export function clientRules(leadCreate: object): ClientRules {
  const properties = (leadCreate as JsonSchema).properties ?? {};
  const fields: Record<string, PropertyRule> = {};
  for (const [name, schema] of Object.entries(properties)) fields[name] = ruleOf(schema);
  const utm = withoutNull(properties.utm ?? {});
  const utmMaxLength = Math.min(
    ...Object.values(utm.properties ?? {}).map((p) => withoutNull(p).maxLength ?? Infinity),
  );
  return {
    fields,
    utmMaxLength: Number.isFinite(utmMaxLength) ? utmMaxLength : 0,
    emailPattern: EMAIL_PATTERN,
    customTextMaxLength: CUSTOM_TEXT_MAX_LENGTH,
    linkPattern: LINK_PATTERN,
    maxMessageLinks: MAX_MESSAGE_LINKS,
  };
}
