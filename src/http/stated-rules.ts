import type { RouteOptions } from 'fastify';

/**
 * The edge rules (src/http/edge-values.ts) that JSON Schema can state, written into every documented route's request
 * schemas, so the documents say what the service enforces and ajv checks it too:
 * - a date-time in the form the service reads (RFC 3339 with `T`, `t` or a space; a zone; seconds 00–59; digits past
 *   the milliseconds only zeros; years from 0001). What a pattern cannot say (a real calendar day, the UTC year
 *   0001–9999 after the offset) stays with the format;
 * - no NUL in any other free text (a string without a pattern, format, enum or const of its own).
 * Unpaired surrogates are refused too, but a pattern cannot name them portably; the description of the Error says so.
 */
export const DATE_TIME_PATTERN =
  '^(?!0000)[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])[Tt ]([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]' +
  '(\\.[0-9]{1,3}0*)?([Zz]|[+-]([01][0-9]|2[0-3]):?[0-5][0-9])$';
export const NO_NUL_PATTERN = '^[^\\u0000]*$';

type Node = Record<string, unknown>;
const isNode = (value: unknown): value is Node => value !== null && typeof value === 'object' && !Array.isArray(value);
const isString = (node: Node) => node.type === 'string' || (Array.isArray(node.type) && node.type.includes('string'));

const SCHEMA_MAPS = ['properties', 'patternProperties', '$defs'];
const SCHEMA_LISTS = ['anyOf', 'oneOf', 'allOf', 'prefixItems'];
const SCHEMAS = ['items', 'additionalProperties', 'not', 'contains', 'if', 'then', 'else', 'propertyNames'];

/** A copy of a request schema with the stated rules added; the schema given is left as it is (others share it). */
export function withStatedRules(schema: unknown): unknown {
  if (!isNode(schema)) return schema;
  const copy: Node = { ...schema };
  for (const key of SCHEMAS) if (isNode(copy[key])) copy[key] = withStatedRules(copy[key]);
  for (const key of SCHEMA_LISTS)
    if (Array.isArray(copy[key])) copy[key] = (copy[key] as unknown[]).map(withStatedRules);
  for (const key of SCHEMA_MAPS)
    if (isNode(copy[key]))
      copy[key] = Object.fromEntries(Object.entries(copy[key]).map(([name, s]) => [name, withStatedRules(s)]));
  if (isString(copy) && copy.pattern === undefined) {
    if (copy.format === 'date-time') copy.pattern = DATE_TIME_PATTERN;
    else if (copy.format === undefined && copy.enum === undefined && copy.const === undefined)
      copy.pattern = NO_NUL_PATTERN;
  }
  return copy;
}

const PARTS = ['body', 'querystring', 'params', 'headers'] as const;

/** fastify's onRoute: a documented route's request parts get the stated rules (its answers are left alone). */
export function stateEdgeRules(route: RouteOptions): void {
  const schema = route.schema as (RouteOptions['schema'] & { hide?: boolean }) | undefined;
  if (!schema || schema.hide) return;
  for (const part of PARTS) if (schema[part] !== undefined) schema[part] = withStatedRules(schema[part]);
}
