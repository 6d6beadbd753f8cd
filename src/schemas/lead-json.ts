import { SerializerSelector } from '@fastify/fast-json-stringify-compiler';
import type { Lead } from '../domain/leads/lead.js';
import { LeadSchema } from './lead.js';

/*
 * The one serialiser of a Lead: the read model stores its text (the `leads.body` column, passed on as it is by the
 * list and the read), and the API answers a changed lead with it. fast-json-stringify compiled from the spec's
 * LeadSchema, as fastify compiles response schemas: every field in the spec's order, nothing else. The free-form
 * objects (utm, custom_fields) are written with their keys in one order whatever order they came in (sorted, then as
 * JavaScript orders an object's keys: integer-like ones first), so a lead folded from events as said (live) and one
 * folded from the same events read back from jsonb (rebuild, import) give the same bytes.
 */

type Serialise = (lead: unknown) => string;
let compiled: Serialise | undefined;

function serialiser(): Serialise {
  compiled ??= SerializerSelector()(undefined as never, undefined as never)({
    schema: LeadSchema,
    method: 'GET',
    url: '/v1/leads/:id',
    httpStatus: '200',
  } as never) as Serialise;
  return compiled;
}

/** A copy of a JSON value with every object's keys inserted in sorted order (arrays keep theirs). */
function inKeyOrder(value: unknown): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map(inKeyOrder);
  const sorted: Record<string, unknown> = {};
  for (const key of Object.keys(value).sort()) sorted[key] = inKeyOrder((value as Record<string, unknown>)[key]);
  return sorted;
}

/** The Lead's JSON text, as stored and as answered. */
export function leadJson(lead: Lead): string {
  return serialiser()({
    ...lead,
    utm: lead.utm === null ? null : inKeyOrder(lead.utm),
    custom_fields: inKeyOrder(lead.custom_fields),
  });
}
