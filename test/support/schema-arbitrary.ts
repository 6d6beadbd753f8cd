import fc from 'fast-check';

/**
 * fast-check arbitraries from the JSON Schemas of an OpenAPI document's request parts: values a schema accepts
 * (`validValue`) and values it refuses (`invalidValue`). Small on purpose: the keywords the service's request schemas
 * use (type and type lists, enum, const, anyOf/oneOf, the formats uuid, date-time, date, email, uri, string lengths
 * and patterns, integer and number ranges, objects with required and additionalProperties, arrays).
 */
export type JsonSchema = Record<string, unknown>;

const typesOf = (schema: JsonSchema): string[] =>
  schema.type === undefined ? [] : Array.isArray(schema.type) ? (schema.type as string[]) : [schema.type as string];

const FORMATS: Record<string, fc.Arbitrary<string>> = {
  uuid: fc.uuid(),
  'date-time': fc
    .date({ min: new Date('2000-01-01T00:00:00Z'), max: new Date('2030-12-31T00:00:00Z'), noInvalidDate: true })
    .map((d) => d.toISOString()),
  date: fc
    .date({ min: new Date('2020-01-01T00:00:00Z'), max: new Date('2030-12-31T00:00:00Z'), noInvalidDate: true })
    .map((d) => d.toISOString().slice(0, 10)),
  email: fc.constantFrom('owner@northstar.example', 'someone@example.org', 'a.b@example.com'),
  uri: fc.constantFrom('https://example.com/landing', 'https://www.example.org/a?b=c'),
  binary: fc.constant('file'),
};

function stringValue(schema: JsonSchema): fc.Arbitrary<string> {
  const format = schema.format as string | undefined;
  if (format && FORMATS[format]) return FORMATS[format];
  const minLength = (schema.minLength as number | undefined) ?? 0;
  const maxLength = Math.min((schema.maxLength as number | undefined) ?? 40, minLength + 40);
  if (typeof schema.pattern === 'string')
    return fc
      .stringMatching(new RegExp(schema.pattern as string, 'u'))
      .filter((s) => s.length >= minLength && s.length <= maxLength && !s.includes('\u0000'));
  return fc.string({ minLength, maxLength, unit: 'grapheme-ascii' });
}

function numberValue(schema: JsonSchema, integer: boolean): fc.Arbitrary<number> {
  const min = (schema.minimum as number | undefined) ?? (integer ? -1000 : -1000);
  const exclusiveMin = schema.exclusiveMinimum as number | undefined;
  const max = (schema.maximum as number | undefined) ?? 1_000_000;
  if (integer) return fc.integer({ min: Math.ceil(min), max: Math.floor(max) });
  return fc
    .double({ min, max, noNaN: true, noDefaultInfinity: true })
    .filter((n) => exclusiveMin === undefined || n > exclusiveMin);
}

function objectValue(schema: JsonSchema, depth: number): fc.Arbitrary<Record<string, unknown>> {
  const properties = (schema.properties ?? {}) as Record<string, JsonSchema>;
  const required = new Set((schema.required ?? []) as string[]);
  const record: Record<string, fc.Arbitrary<unknown>> = {};
  for (const [name, property] of Object.entries(properties)) record[name] = validValue(property, depth + 1);
  const base = fc.record(record, { requiredKeys: [...required].filter((name) => name in properties) });
  const unions = (schema.anyOf ?? schema.oneOf) as JsonSchema[] | undefined;
  if (!unions) return base;
  // A rule over properties (a phone or an email; exactly one subject): one branch's required properties, and for
  // oneOf none of the other branches'.
  return fc.tuple(base, fc.nat({ max: unions.length - 1 })).chain(([value, branch]) => {
    const chosen = unions[branch]!;
    const needed = (chosen.required ?? []) as string[];
    const copy = { ...value };
    if (schema.oneOf)
      for (const other of unions)
        if (other !== chosen) for (const name of (other.required ?? []) as string[]) delete copy[name];
    const narrowed = (chosen.properties ?? {}) as Record<string, JsonSchema>;
    const fills = needed.map((name) =>
      validValue({ ...(properties[name] ?? {}), ...(narrowed[name] ?? {}) }, depth + 1),
    );
    return fc.tuple(...fills).map((values) => {
      needed.forEach((name, i) => (copy[name] = values[i]));
      return copy;
    });
  });
}

/** A value the schema accepts (as far as its keywords go: the service's own rules may still refuse it). */
export function validValue(schema: JsonSchema, depth = 0): fc.Arbitrary<unknown> {
  if (schema.const !== undefined) return fc.constant(schema.const);
  if (Array.isArray(schema.enum)) return fc.constantFrom(...(schema.enum as unknown[]));
  const branches = (schema.anyOf ?? schema.oneOf) as JsonSchema[] | undefined;
  const types = typesOf(schema);
  if (branches && types.length === 0) return fc.oneof(...branches.map((b) => validValue(b, depth)));
  const arbitraries = types.map((type): fc.Arbitrary<unknown> => {
    switch (type) {
      case 'string':
        return stringValue(schema);
      case 'integer':
        return numberValue(schema, true);
      case 'number':
        return numberValue(schema, false);
      case 'boolean':
        return fc.boolean();
      case 'null':
        return fc.constant(null);
      case 'array': {
        const items = (schema.items ?? {}) as JsonSchema;
        const minLength = (schema.minItems as number | undefined) ?? 0;
        const maxLength = Math.min((schema.maxItems as number | undefined) ?? 3, minLength + 3);
        return fc
          .array(validValue(items, depth + 1), {
            minLength,
            maxLength,
            ...(schema.uniqueItems ? { selector: (v: unknown) => JSON.stringify(v) } : {}),
          })
          .map((v) => v) as fc.Arbitrary<unknown>;
      }
      case 'object':
        return depth > 6 ? fc.constant({}) : objectValue(schema, depth);
      default:
        return fc.constant(null);
    }
  });
  if (arbitraries.length === 0) return fc.jsonValue({ maxDepth: 2 });
  return arbitraries.length === 1 ? arbitraries[0]! : fc.oneof(...arbitraries);
}

/** A value the schema refuses: another type, past a range or a length, outside an enum, malformed for its format. */
export function invalidValue(schema: JsonSchema): fc.Arbitrary<unknown> {
  const types = typesOf(schema);
  const wrongType = fc
    .constantFrom<unknown>('text', 12, 1.5, true, null, [], {})
    .filter((v) => !types.some((type) => matchesType(v, type)));
  const candidates: fc.Arbitrary<unknown>[] = [];
  if (types.length > 0 && schema.const === undefined && !schema.enum) candidates.push(wrongType);
  if (typeof schema.maximum === 'number') candidates.push(fc.constant(schema.maximum + 1));
  if (typeof schema.minimum === 'number') candidates.push(fc.constant(schema.minimum - 1));
  if (typeof schema.maxLength === 'number') candidates.push(fc.constant('x'.repeat(schema.maxLength + 1)));
  if (typeof schema.minLength === 'number' && schema.minLength > 0) candidates.push(fc.constant(''));
  if (Array.isArray(schema.enum) || schema.const !== undefined) candidates.push(fc.constant('not-one-of-them'));
  if (schema.format === 'uuid')
    candidates.push(fc.constantFrom('not-a-uuid', '{0190a5c4-8c1e-7000-8000-000000000001}'));
  if (schema.format === 'date-time')
    candidates.push(
      fc.constantFrom('2026-13-01T00:00:00Z', '0000-01-01T00:00:00Z', '2026-01-01', '2024-12-31T23:59:60Z'),
    );
  if (types.includes('string') && schema.format === undefined && !schema.enum) candidates.push(fc.constant('a\u0000b'));
  return candidates.length > 0 ? fc.oneof(...candidates) : wrongType;
}

function matchesType(value: unknown, type: string): boolean {
  switch (type) {
    case 'integer':
      return Number.isInteger(value);
    case 'number':
      return typeof value === 'number';
    case 'null':
      return value === null;
    case 'array':
      return Array.isArray(value);
    case 'object':
      return value !== null && typeof value === 'object' && !Array.isArray(value);
    default:
      return typeof value === type;
  }
}
