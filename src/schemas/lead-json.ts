import { SerializerSelector } from '@fastify/fast-json-stringify-compiler';
import type { Static, TObject } from 'typebox';
import type { Lead } from '../domain/leads/lead.js';
import { LeadSchema } from './lead.js';

type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
/** The spec's LeadSchema and the domain's Lead are one shape: a field added to one does not compile without the other. */
const schemaIsLead: Same<Static<typeof LeadSchema>, Lead> = true;
void schemaIsLead;

/*
 * The one serialiser of a Lead: the read model stores its text (the `leads.body` column, passed on as it is by the
 * list and the read), and the API answers a changed lead with it. fast-json-stringify compiled from the spec's
 * LeadSchema, as fastify compiles response schemas: every field in the spec's order, nothing else. The free-form
 * objects (utm, custom_fields) are written with their keys in one order whatever order they came in (sorted, then as
 * JavaScript orders an object's keys: integer-like ones first), so a lead folded from events as said (live) and one
 * folded from the same events read back from jsonb (rebuild, import) give the same bytes.
 */

type Serialise = (lead: unknown) => string;

/** fast-json-stringify for a schema, compiled on first use as fastify compiles a response schema. */
function compiledFor(schema: TObject): () => Serialise {
  let compiled: Serialise | undefined;
  return () =>
    (compiled ??= SerializerSelector()(undefined as never, undefined as never)({
      schema,
      method: 'GET',
      url: '/v1/leads/:id',
      httpStatus: '200',
    } as never) as Serialise);
}

/** A copy of a JSON value with every object's keys inserted in sorted order (arrays keep theirs). */
function inKeyOrder(value: unknown): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map(inKeyOrder);
  const sorted: Record<string, unknown> = {};
  for (const key of Object.keys(value).sort()) sorted[key] = inKeyOrder((value as Record<string, unknown>)[key]);
  return sorted;
}

/**
 * The serialiser of a lead schema: `leadJson` below is the spec's; tests make one of a schema with a field added, to
 * act out the path that field takes to the stored rows (test/projections/lead-rows.test.ts). A lead lacking one of the
 * schema's fields (which the compiled serialiser refuses; evolving a payload older than a field gives it its default,
 * so only a log this code did not write can lack one) is written by JSON.stringify, the field left out, its fields in
 * the schema's order and every object's keys in one order.
 */
export function leadSerialiser(schema: TObject): (lead: Lead) => string {
  const serialiser = compiledFor(schema);
  const fields = Object.keys(schema.properties);
  return (lead) => {
    const ordered = {
      ...lead,
      utm: lead.utm === null || lead.utm === undefined ? lead.utm : inKeyOrder(lead.utm),
      custom_fields: inKeyOrder(lead.custom_fields),
    };
    try {
      return serialiser()(ordered);
    } catch {
      const record = lead as unknown as Record<string, unknown>;
      return JSON.stringify(Object.fromEntries(fields.map((field) => [field, inKeyOrder(record[field])])));
    }
  };
}

/** The Lead's JSON text, as stored and as answered. */
export const leadJson: (lead: Lead) => string = leadSerialiser(LeadSchema);
