import { randomUUID } from 'node:crypto';
import type { SeededWorkspace } from './app.js';
import type { JsonSchema } from './schema-arbitrary.js';
import type { Operation } from './openapi.js';

/** An operation of a served document with what a request to it needs. */
export interface DocumentedOperation {
  method: string;
  path: string;
  operation: Operation & {
    requestBody?: { content: Record<string, { schema: JsonSchema }> };
    security?: Record<string, string[]>[];
  };
}

/** The credential an operation takes: the operator's token, a staff token, the widget's query key or a secret key. */
export function credentialOf(
  { path, operation }: DocumentedOperation,
  ws: SeededWorkspace,
  operatorToken: string,
): Record<string, string> {
  if (operation.security?.some((s) => 'operatorToken' in s)) return { authorization: `Bearer ${operatorToken}` };
  if (path.startsWith('/admin/')) return { authorization: `Bearer ${ws.staffToken}` };
  if (path === '/v1/widget/config') return { origin: 'https://www.example.com' };
  return { authorization: `Bearer ${ws.live}` };
}

/** The path with its parameters filled: the workspace's slug, `ids` (or a fresh uuid naming nothing), a module key. */
export function concretePath(path: string, ws: SeededWorkspace, ids: Record<string, string> = {}): string {
  return path.replace(/\{([^}]+)\}/g, (_, name: string) =>
    name === 'workspace' ? ws.workspace.slug : name === 'module' ? 'sop' : (ids[name] ?? randomUUID()),
  );
}

/** Where an integer sits in a JSON body: its path of property names and array indexes, and its schema. */
export interface BodyInteger {
  at: (string | number)[];
  schema: JsonSchema;
}

const typesOf = (schema: JsonSchema) => [schema.type].flat().filter((t): t is string => typeof t === 'string');

/** Every integer a body schema holds, through properties, array items and union branches. */
export function bodyIntegers(schema: JsonSchema, at: (string | number)[] = []): BodyInteger[] {
  const found: BodyInteger[] = [];
  if (typesOf(schema).includes('integer')) found.push({ at, schema });
  for (const [name, property] of Object.entries((schema.properties ?? {}) as Record<string, JsonSchema>))
    found.push(...bodyIntegers(property, [...at, name]));
  for (const property of Object.values((schema.patternProperties ?? {}) as Record<string, JsonSchema>))
    found.push(...bodyIntegers(property, [...at, 'any_key']));
  if (schema.items) found.push(...bodyIntegers(schema.items as JsonSchema, [...at, 0]));
  for (const branch of [...((schema.anyOf ?? []) as JsonSchema[]), ...((schema.oneOf ?? []) as JsonSchema[])])
    found.push(...bodyIntegers(branch, at));
  return found;
}

/** `value` set at `at` inside `body`, making the objects and arrays on the way. */
export function setAt(body: unknown, at: (string | number)[], value: unknown): unknown {
  if (at.length === 0) return value;
  const [head, ...rest] = at;
  const container = (
    typeof head === 'number' ? (Array.isArray(body) ? [...body] : []) : { ...(body as object) }
  ) as Record<string | number, unknown>;
  container[head!] = setAt(container[head!], rest, value);
  return container;
}
