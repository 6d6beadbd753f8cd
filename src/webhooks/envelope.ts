import type { StoredEvent } from '../events/types.js';
import { EVENT_KINDS } from '../shared/enums.js';

const KINDS: ReadonlySet<string> = new Set(EVENT_KINDS);

export const isWebhookKind = (type: string) => KINDS.has(type);

/**
 * The delivery body of an event, or null for an internal event. The envelope is built once from the stored event
 * (whose `data.payload` is the webhook's `data`), so every attempt and every resend carries the same bytes.
 */
export function envelopeBody(
  event: Pick<StoredEvent, 'id' | 'type' | 'tenantId' | 'createdAt' | 'data'>,
): string | null {
  const payload = event.data.payload;
  if (!KINDS.has(event.type) || typeof payload !== 'object' || payload === null || Array.isArray(payload)) return null;
  return JSON.stringify({
    id: event.id,
    event: event.type,
    tenant_id: event.tenantId,
    created_at: event.createdAt.toISOString(),
    data: payload,
  });
}
