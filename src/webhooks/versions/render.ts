import { streamOf } from '../../domain/streams.js';
import type { StoredEvent } from '../../events/types.js';
import { EVENT_KINDS, type EventKind } from '../../shared/enums.js';
import { PAYLOAD_VERSIONS, type PayloadVersion } from './names.js';
import type { EnvelopeV1, EnvelopeV2, ResourceType } from './schemas.js';
import { STEPS_DOWN } from './steps.js';

const KINDS: ReadonlySet<string> = new Set(EVENT_KINDS);

export const isWebhookKind = (type: string): type is EventKind => KINDS.has(type);

/** The resource each kind is about, for streams whose name says no known kind (every real stream's name says it). */
const RESOURCE_OF_KIND: Record<EventKind, ResourceType> = {
  'lead.created': 'lead',
  'lead.updated': 'lead',
  'lead.assigned': 'lead',
  'lead.converted': 'lead',
  'lead.lost': 'lead',
  'application.stage_changed': 'application',
  'application.module_updated': 'application',
  'application.outcome': 'application',
  'document.uploaded': 'document',
  'document.rejected': 'document',
  'invoice.issued': 'invoice',
  'payment.received': 'invoice',
  'refund.paid': 'invoice',
  'task.overdue': 'task',
  'webhook.test': 'webhook_endpoint',
};

const TRAILING_UUID = /([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/i;

export type RenderableEvent = Pick<
  StoredEvent,
  'id' | 'type' | 'tenantId' | 'createdAt' | 'data' | 'streamId' | 'revision'
>;

/**
 * The resource an event changed and its version after it: the stream the event was appended to (every stream is one
 * resource: a payment is a change of its invoice) and its position there, counted from 1. The stream lock makes
 * positions follow commit order per stream, so a higher version is always the later state.
 */
export function resourceOf(event: Pick<RenderableEvent, 'type' | 'streamId' | 'revision'> & { type: EventKind }) {
  const stream = streamOf(event.streamId);
  const type: ResourceType = stream
    ? stream.kind === 'webhook-endpoint'
      ? 'webhook_endpoint'
      : stream.kind === 'list-export'
        ? RESOURCE_OF_KIND[event.type]
        : stream.kind
    : RESOURCE_OF_KIND[event.type];
  const id = TRAILING_UUID.exec(event.streamId)?.[1]?.toLowerCase() ?? event.streamId;
  return { type, id, version: event.revision + 1 };
}

/** The envelope in the newest version, built from the stored event; null for an internal event (no payload). */
function currentEnvelope(event: RenderableEvent): EnvelopeV2 | null {
  const payload = event.data.payload;
  if (!isWebhookKind(event.type) || typeof payload !== 'object' || payload === null || Array.isArray(payload))
    return null;
  return {
    id: event.id,
    event: event.type,
    tenant_id: event.tenantId,
    created_at: event.createdAt.toISOString(),
    payload_version: '2026-11-29', // the newest shape is built here, so a new version changes this function too
    resource: resourceOf({ type: event.type, streamId: event.streamId, revision: event.revision }),
    data: payload as Record<string, unknown>,
  };
}

/** The newest envelope taken down to `version`, one step at a time. */
function envelopeAt(current: EnvelopeV2, version: PayloadVersion): EnvelopeV1 | EnvelopeV2 {
  let envelope: EnvelopeV1 | EnvelopeV2 = current;
  for (let i = PAYLOAD_VERSIONS.length - 1; PAYLOAD_VERSIONS[i] !== version; i--) {
    const from = PAYLOAD_VERSIONS[i] as keyof typeof STEPS_DOWN;
    envelope = STEPS_DOWN[from](envelope as EnvelopeV2);
  }
  return envelope;
}

/** The body of an event in a payload version (its JSON text), or null for an internal event. */
export function renderEnvelope(event: RenderableEvent, version: PayloadVersion): string | null {
  const current = currentEnvelope(event);
  return current === null ? null : JSON.stringify(envelopeAt(current, version));
}

/** The body of an event in every version, or null for an internal event (the fan-out picks each endpoint's). */
export function renderAllVersions(event: RenderableEvent): Record<PayloadVersion, string> | null {
  const current = currentEnvelope(event);
  if (current === null) return null;
  return Object.fromEntries(PAYLOAD_VERSIONS.map((v) => [v, JSON.stringify(envelopeAt(current, v))])) as Record<
    PayloadVersion,
    string
  >;
}
