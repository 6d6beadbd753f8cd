import { APPLICATION_EVENT_TYPES } from '../../domain/applications/index.js';
import { DOCUMENT_EVENT_TYPES } from '../../domain/documents/index.js';
import { INVOICE_EVENT_TYPES } from '../../domain/invoices/index.js';
import { LEAD_EVENT_TYPES } from '../../domain/leads/lead.js';
import { TASK_EVENT_TYPES } from '../../domain/tasks/index.js';
import { STREAM_KINDS, streamName, type StreamKind } from '../../domain/streams.js';
import { ENDPOINT_EVENTS } from '../../domain/webhooks/endpoint.js';

/*
 * What an imported event names (docs/decisions.md, "An import changes nothing outside its own workspace"): its
 * stream, and the ids in its data that the projections find rows by. Each must be canonical (one spelling: PostgreSQL
 * compares uuids without regard to case, and the projections cut ids out of stream names) and must belong to the
 * workspace being imported: the stream's own id, or a stream of the same import.
 */

/** A uuid as the service writes one: lower case, hyphenated. */
export const CANONICAL_UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';

export type StreamFamily = StreamKind;

const EVENT_TYPES: Record<StreamFamily, readonly string[]> = {
  lead: LEAD_EVENT_TYPES,
  application: APPLICATION_EVENT_TYPES,
  document: DOCUMENT_EVENT_TYPES,
  invoice: INVOICE_EVENT_TYPES,
  task: TASK_EVENT_TYPES,
  'webhook-endpoint': Object.values(ENDPOINT_EVENTS),
  'list-export': ['list.exported'],
};

const STREAM = new RegExp(`^(${STREAM_KINDS.join('|')})-(${CANONICAL_UUID})$`);
const UUID = new RegExp(`^${CANONICAL_UUID}$`);

/** `own`: must be the stream's id; a family: must be a stream of that family in the same import (or null). */
type Names = 'own' | 'lead' | 'application';
interface NamedId {
  path: readonly string[];
  names: Names;
  /** Only in these event types (the same path means something else in the others). */
  types?: readonly string[];
}
const named = (path: string, names: Names, types?: readonly string[]): NamedId => ({
  path: path.split('.'),
  names,
  ...(types ? { types } : {}),
});

const SUBJECT = [named('lead_id', 'lead'), named('application_id', 'application'), named('person_id', 'lead')];

const NAMED_IDS: Record<StreamFamily, readonly NamedId[]> = {
  lead: [named('payload.id', 'own'), named('application.id', 'application')],
  application: [named('application_id', 'own'), named('payload.id', 'own'), named('lead_id', 'lead')],
  document: [named('document_id', 'own'), named('payload.id', 'own'), ...SUBJECT],
  invoice: [
    named('invoice_id', 'own'),
    named('payload.id', 'own', ['invoice.issued']),
    named('payload.invoice_id', 'own'),
    named('refund.invoice_id', 'own'),
    named('payload.lead_id', 'lead'),
    named('payload.application_id', 'application'),
    named('person_id', 'lead'),
  ],
  task: [named('task_id', 'own'), ...SUBJECT],
  'webhook-endpoint': [named('endpoint_id', 'own')],
  'list-export': [],
};

export interface ParsedStream {
  family: StreamFamily;
  id: string;
}

/** The family and id of a stream name as the service writes one; null for any other text. */
export function parseStream(stream: string): ParsedStream | null {
  const match = STREAM.exec(stream);
  return match ? { family: match[1] as StreamFamily, id: match[2]! } : null;
}

/** A stream another event must refer to (by its first line) for the import to be whole. */
export interface Reference {
  stream: string;
  what: string;
}

export type Naming = { ok: true; stream: ParsedStream; references: Reference[] } | { ok: false; reason: string };

function at(data: unknown, path: readonly string[]): unknown {
  let value = data;
  for (const key of path) {
    if (typeof value !== 'object' || value === null || Array.isArray(value) || !Object.hasOwn(value, key))
      return undefined;
    value = (value as Record<string, unknown>)[key];
  }
  return value;
}

/** Checks the stream and the ids an event names; the references are the streams it needs in the same import. */
export function eventNaming(event: { stream: string; type: string; data: unknown }): Naming {
  const stream = parseStream(event.stream);
  if (stream === null)
    return {
      ok: false,
      reason: `the stream name ${JSON.stringify(event.stream)} is not one the service writes (<kind>-<lower-case uuid>)`,
    };
  if (!EVENT_TYPES[stream.family].includes(event.type))
    return { ok: false, reason: `a ${event.type} event has no place in a ${stream.family} stream` };
  const references: Reference[] = [];
  for (const { path, names, types } of NAMED_IDS[stream.family]) {
    if (types && !types.includes(event.type)) continue;
    const value = at(event.data, path);
    const field = path.join('.');
    if (value === undefined || (value === null && names !== 'own')) continue;
    if (typeof value !== 'string' || !UUID.test(value))
      return { ok: false, reason: `its ${field} ${JSON.stringify(value)} is not a lower-case uuid` };
    if (names === 'own') {
      if (value !== stream.id)
        return { ok: false, reason: `its ${field} ${value} is not the id of its own stream ${event.stream}` };
    } else references.push({ stream: streamName(names, value), what: `its ${field} ${value}` });
  }
  return { ok: true, stream, references };
}
