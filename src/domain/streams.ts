/*
 * Stream names: `<kind>-<id>`. They are stored data (hashed into the chain, the stream locks and the sealed values'
 * additional data), so the spelling never changes. Each aggregate names its streams through `streamName`; readers
 * of a name (projections, erasure, history) parse it with `streamOf`.
 */

export const STREAM_KINDS = [
  'lead',
  'application',
  'document',
  'invoice',
  'task',
  'webhook-endpoint',
  'list-export',
] as const;
export type StreamKind = (typeof STREAM_KINDS)[number];

export const streamName = (kind: StreamKind, id: string): string => `${kind}-${id}`;

/** The kind and id of a stream name; null for a name of no known kind. */
export function streamOf(name: string): { kind: StreamKind; id: string } | null {
  for (const kind of STREAM_KINDS) if (name.startsWith(`${kind}-`)) return { kind, id: name.slice(kind.length + 1) };
  return null;
}

/** The id in a stream name of the given kind (the projections' rows are keyed by it). */
export const idOfStream = (kind: StreamKind, name: string): string => name.slice(kind.length + 1);

/** The kinds whose first event names the person their data belongs to (`person_id`). */
const FILED_UNDER_PERSON: Partial<Record<StreamKind, string>> = {
  document: 'document.received',
  task: 'task.created',
  invoice: 'invoice.issued',
};

/**
 * The person a new stream's data belongs to, for its data key: a lead's own id, an application's lead, and for a
 * document, task or invoice the lead its first event names (`person_id`); null when it names none.
 */
export function personOfNewStream(
  name: string,
  first: { type: string; data: Record<string, unknown> } | undefined,
): string | null {
  const stream = streamOf(name);
  if (stream === null) return null;
  if (stream.kind === 'lead') return stream.id;
  if (first === undefined) return null;
  const named =
    stream.kind === 'application' && first.type === 'application.opened'
      ? first.data.lead_id
      : FILED_UNDER_PERSON[stream.kind] === first.type
        ? first.data.person_id
        : null;
  return typeof named === 'string' ? named : null;
}
