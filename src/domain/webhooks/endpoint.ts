import type { NewEvent, StoredEvent } from '../../events/types.js';

/** Event types of the webhook-endpoint streams. All are internal (no payload) except webhook.test. */
export const ENDPOINT_EVENTS = {
  created: 'webhook_endpoint.created',
  deleted: 'webhook_endpoint.deleted',
  paused: 'webhook_endpoint.paused',
  resumed: 'webhook_endpoint.resumed',
  secretRotated: 'webhook_endpoint.secret_rotated',
  test: 'webhook.test',
} as const;

export const SECRET_ROTATION_OVERLAP_MS = 24 * 60 * 60 * 1000;
export const PAUSE_THRESHOLD = 50;

export const endpointStream = (id: string) => `webhook-endpoint-${id}`;

export interface EndpointState {
  id: string;
  deleted: boolean;
  status: 'active' | 'paused';
  sealedSecret: string;
  previousSealedSecret: string | null;
  previousSecretValidUntil: Date | null;
}

export class EndpointNotFoundError extends Error {
  override name = 'EndpointNotFoundError';
}

export function evolve(state: EndpointState | null, event: Pick<StoredEvent, 'type' | 'data'>): EndpointState | null {
  const data = event.data;
  switch (event.type) {
    case ENDPOINT_EVENTS.created:
      return {
        id: String(data.endpoint_id),
        deleted: false,
        status: 'active',
        sealedSecret: String(data.sealed_secret),
        previousSealedSecret: null,
        previousSecretValidUntil: null,
      };
    case ENDPOINT_EVENTS.deleted:
      return state && { ...state, deleted: true };
    case ENDPOINT_EVENTS.paused:
      return state && { ...state, status: 'paused' };
    case ENDPOINT_EVENTS.resumed:
      return state && { ...state, status: 'active' };
    case ENDPOINT_EVENTS.secretRotated:
      return (
        state && {
          ...state,
          sealedSecret: String(data.sealed_secret),
          previousSealedSecret: String(data.previous_sealed_secret),
          previousSecretValidUntil: new Date(String(data.previous_secret_valid_until)),
        }
      );
    default:
      return state;
  }
}

export function fold(events: readonly Pick<StoredEvent, 'type' | 'data'>[]): EndpointState | null {
  return events.reduce<EndpointState | null>(evolve, null);
}

function existing(state: EndpointState | null): EndpointState {
  if (!state || state.deleted) throw new EndpointNotFoundError('No such webhook endpoint');
  return state;
}

export interface CreateEndpoint {
  endpointId: string;
  url: string;
  description: string | null;
  events: string[];
  sealedSecret: string;
}

export function decideCreate(state: EndpointState | null, command: CreateEndpoint): NewEvent[] {
  if (state) throw new Error(`Webhook endpoint ${command.endpointId} already exists`);
  return [
    {
      type: ENDPOINT_EVENTS.created,
      data: {
        endpoint_id: command.endpointId,
        url: command.url,
        description: command.description,
        events: command.events,
        sealed_secret: command.sealedSecret,
      },
    },
  ];
}

export function decideDelete(state: EndpointState | null): NewEvent[] {
  const endpoint = existing(state);
  return [{ type: ENDPOINT_EVENTS.deleted, data: { endpoint_id: endpoint.id } }];
}

/** Pausing is idempotent: a second worker crossing the threshold, or a deleted endpoint, appends nothing. */
export function decidePause(
  state: EndpointState | null,
  command: { reason: string; consecutiveFailures: number },
): NewEvent[] {
  if (!state || state.deleted || state.status === 'paused') return [];
  return [
    {
      type: ENDPOINT_EVENTS.paused,
      data: { endpoint_id: state.id, reason: command.reason, consecutive_failures: command.consecutiveFailures },
    },
  ];
}

export function decideResume(state: EndpointState | null): NewEvent[] {
  const endpoint = existing(state);
  if (endpoint.status === 'active') return [];
  return [{ type: ENDPOINT_EVENTS.resumed, data: { endpoint_id: endpoint.id } }];
}

/** The new secret signs from now on; the current one stays valid beside it for 24 hours. */
export function decideRotateSecret(
  state: EndpointState | null,
  command: { sealedSecret: string; now: Date },
): NewEvent[] {
  const endpoint = existing(state);
  return [
    {
      type: ENDPOINT_EVENTS.secretRotated,
      data: {
        endpoint_id: endpoint.id,
        sealed_secret: command.sealedSecret,
        previous_sealed_secret: endpoint.sealedSecret,
        previous_secret_valid_until: new Date(command.now.getTime() + SECRET_ROTATION_OVERLAP_MS).toISOString(),
      },
    },
  ];
}

/** webhook.test carries the endpoint in its public shape and goes only to that endpoint, whatever it subscribes to. */
export function decideSendTest(state: EndpointState | null, command: { payload: Record<string, unknown> }): NewEvent[] {
  const endpoint = existing(state);
  return [{ type: ENDPOINT_EVENTS.test, data: { endpoint_id: endpoint.id, payload: command.payload } }];
}
