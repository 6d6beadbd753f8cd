import { Ajv, type ErrorObject, type Options as AjvOptions } from 'ajv';
import addFormats from 'ajv-formats';
import type { FastifyRequest, FastifySchema } from 'fastify';
import {
  CANONICAL_UUID,
  isServiceDateTime,
  textProblem,
  valueProblems,
  withEdgeChecks,
  type EdgeProblem,
} from '../http/edge-values.js';
import { CONSOLE_FORMATS } from './schemas.js';
import type { SchemaCompilations } from '../http/schema-compilation.js';

/** A form's or query's refused fields: field name → the words shown by it ('' for the whole part). */
export type FieldErrors = Record<string, string>;

function consoleAjv(options: AjvOptions): Ajv {
  const instance = new Ajv({ allErrors: true, removeAdditional: false, useDefaults: false, strict: false, ...options });
  addFormats.default(instance);
  // The API's formats (src/http/app.ts), and the console's own dates.
  instance.addFormat('date-time', { type: 'string', validate: isServiceDateTime });
  instance.addFormat('uuid', CANONICAL_UUID);
  for (const [name, validate] of Object.entries(CONSOLE_FORMATS))
    instance.addFormat(name, { type: 'string', validate });
  return instance;
}

/**
 * The console scope's validator (each schema compiled on first use, or by `compileAll`): the API's rules (bodies exact, query strings and paths coerced from text, the edge
 * checks on every part) with the console's date formats.
 */
export function consoleValidatorCompiler(compilations: SchemaCompilations) {
  const bodyAjv = consoleAjv({ coerceTypes: false });
  const textAjv = consoleAjv({ coerceTypes: true });
  return ({ schema, httpPart }: { schema: unknown; httpPart?: string }) => {
    const ajv = httpPart === 'body' ? bodyAjv : textAjv;
    return withEdgeChecks(
      compilations.onFirstUse(() => ajv.compile(schema as object)),
      schema,
      httpPart !== 'body',
    );
  };
}

type Problem = ErrorObject | EdgeProblem;

const unescapePointer = (token: string) => token.replace(/~1/g, '/').replace(/~0/g, '~');

/** The form field an error is about: the missing property, or the first step of its path ('' for the whole part). */
export function fieldOf(error: Problem): string {
  if (error.keyword === 'required') {
    const missing = (error.params as { missingProperty?: unknown }).missingProperty;
    if (typeof missing === 'string') return missing;
  }
  const first = error.instancePath.split('/')[1];
  return first === undefined ? '' : unescapePointer(first);
}

/** The `errorMessage` a field's schema carries (src/console/schemas.ts), if any. */
function declaredMessage(partSchema: unknown, field: string): string | undefined {
  const properties = (partSchema as { properties?: Record<string, { errorMessage?: unknown }> } | undefined)
    ?.properties;
  const message = properties?.[field]?.errorMessage;
  return typeof message === 'string' ? message : undefined;
}

/** The words for one refused field: the edge checks' own, else its schema's, else a plain sentence. */
function messageOf(error: Problem, partSchema: unknown, field: string): string {
  if (error.keyword === 'text' || error.keyword === 'finite') return `This ${error.message}.`;
  const declared = declaredMessage(partSchema, field);
  if (declared) return declared;
  if (error.keyword === 'required') return 'Fill this in.';
  if (error.keyword === 'type' && field !== '') return 'Give this once, as text.';
  return field === '' ? 'This could not be read.' : 'This value is not accepted here.';
}

type Part = 'body' | 'querystring' | 'params' | 'headers';
const PARTS = new Set<string>(['body', 'querystring', 'params', 'headers']);

/** A schema error's messages by field, the first for each field (the edge checks' come first). */
export function fieldErrors(request: FastifyRequest, validation: Problem[], context: string | undefined): FieldErrors {
  const schema: FastifySchema | undefined = request.routeOptions.schema;
  const part: Part = context && PARTS.has(context) ? (context as Part) : 'body';
  const partSchema = schema?.[part];
  const errors: FieldErrors = {};
  for (const error of validation) {
    const field = fieldOf(error);
    errors[field] ??= messageOf(error, partSchema, field);
  }
  return errors;
}

/**
 * What no console route may be handed, even one that declares no schema for a part yet: a NUL or an unpaired
 * surrogate anywhere (PostgreSQL cannot store it), a query-string key given twice (a handler reading it as text
 * would get a list), and an `id` or `…_id` field that is not a uuid. Empty when there is nothing to refuse.
 */
export function undeclaredPartErrors(request: FastifyRequest): FieldErrors {
  const schema = request.routeOptions.schema;
  const errors: FieldErrors = {};
  const parts: [Part, unknown][] = [
    ['querystring', request.query],
    ['body', request.body],
  ];
  for (const [part, value] of parts) {
    if (schema?.[part] || value === null || typeof value !== 'object') continue;
    for (const problem of valueProblems(value)) errors[fieldOf(problem)] ??= `This ${problem.message}.`;
    for (const [key, given] of Object.entries(value)) {
      if (part === 'querystring' && Array.isArray(given))
        errors[key] ??= 'Give this once: the address names it more than once.';
      // The console names a record's id `id` or `<record>_id`, and every such id is a uuid.
      const one = Array.isArray(given) ? given[0] : given;
      if ((key === 'id' || key.endsWith('_id')) && typeof one === 'string' && one !== '' && !CANONICAL_UUID.test(one))
        errors[key] ??= 'This is not the id of a record.';
    }
  }
  return errors;
}

/** Whether a path no params schema declares holds what no record's path holds (as `undeclaredPartErrors` says). */
export function undeclaredPathIsMalformed(request: FastifyRequest): boolean {
  if (request.routeOptions.schema?.params) return false;
  const params = request.params;
  if (params === null || typeof params !== 'object') return false;
  return Object.entries(params).some(
    ([key, value]) =>
      typeof value === 'string' &&
      (textProblem(value) !== undefined || ((key === 'id' || key.endsWith('Id')) && !CANONICAL_UUID.test(value))),
  );
}

const asText = (value: unknown): Record<string, string | undefined> =>
  value !== null && typeof value === 'object'
    ? Object.fromEntries(
        Object.entries(value).map(([k, v]) => [k, Array.isArray(v) ? String(v[0] ?? '') : String(v ?? '')]),
      )
    : {};

/**
 * A refused request's parts as text (the first of a repeated value), for an `onInvalid` page to show the form again
 * with what was typed: they failed their schema, so they are not typed.
 */
export function partsAsText(request: FastifyRequest) {
  return { params: asText(request.params), query: asText(request.query), body: asText(request.body) };
}
