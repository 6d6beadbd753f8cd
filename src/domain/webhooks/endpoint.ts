import { eventReader } from '../event-types.js';
import { streamName } from '../streams.js';

/** Event types of the webhook-endpoint streams. All are internal (no payload) except webhook.test. */
export const ENDPOINT_EVENTS = {
  created: 'webhook_endpoint.created',
  deleted: 'webhook_endpoint.deleted',
  changed: 'webhook_endpoint.changed',
  paused: 'webhook_endpoint.paused',
  resumed: 'webhook_endpoint.resumed',
  secretRotated: 'webhook_endpoint.secret_rotated',
  versionChanged: 'webhook_endpoint.version_changed',
  rateLimitChanged: 'webhook_endpoint.rate_limit_changed',
  test: 'webhook.test',
} as const;

export type EndpointCreated = {
  type: typeof ENDPOINT_EVENTS.created;
  data: {
    endpoint_id: string;
    url: string;
    description: string | null;
    events: string[];
    sealed_secret: string;
    /** The payload version it receives; absent on endpoints created before versions existed (the first one). */
    payload_version?: string;
    /** The most deliveries a second it accepts; absent or null: no limit. */
    rate_limit_per_second?: number | null;
  };
};
/** Staff changed where the endpoint receives, what it is described as, or which kinds it subscribes to. */
export type EndpointChanged = {
  type: typeof ENDPOINT_EVENTS.changed;
  data: { endpoint_id: string; url: string; description: string | null; events: string[] };
};
export type EndpointDeleted = { type: typeof ENDPOINT_EVENTS.deleted; data: { endpoint_id: string } };
export type EndpointPaused = {
  type: typeof ENDPOINT_EVENTS.paused;
  data: { endpoint_id: string; reason: string; consecutive_failures: number };
};
export type EndpointResumed = { type: typeof ENDPOINT_EVENTS.resumed; data: { endpoint_id: string } };
export type EndpointSecretRotated = {
  type: typeof ENDPOINT_EVENTS.secretRotated;
  data: {
    endpoint_id: string;
    sealed_secret: string;
    previous_sealed_secret: string;
    /** ISO 8601. */
    previous_secret_valid_until: string;
  };
};
/** The owner moved the endpoint to another payload version: its deliveries from now on are rendered in it. */
export type EndpointVersionChanged = {
  type: typeof ENDPOINT_EVENTS.versionChanged;
  data: { endpoint_id: string; payload_version: string; previous_payload_version: string };
};
/** The owner set or removed the most deliveries a second the endpoint accepts (null: no limit). */
export type EndpointRateLimitChanged = {
  type: typeof ENDPOINT_EVENTS.rateLimitChanged;
  data: { endpoint_id: string; rate_limit_per_second: number | null; previous_rate_limit_per_second: number | null };
};
export type EndpointTestSent = {
  type: typeof ENDPOINT_EVENTS.test;
  data: { endpoint_id: string; payload: Record<string, unknown> };
};

/** The events of a webhook-endpoint stream. Type aliases, so each is a `NewEvent` as it stands. */
export type EndpointEvent =
  | EndpointCreated
  | EndpointChanged
  | EndpointDeleted
  | EndpointPaused
  | EndpointResumed
  | EndpointSecretRotated
  | EndpointVersionChanged
  | EndpointRateLimitChanged
  | EndpointTestSent;

/** An endpoint event read from the log: its type checked, its data as decide wrote it for that type. */
export const toEndpointEvent = eventReader<EndpointEvent>(Object.values(ENDPOINT_EVENTS), 'a webhook endpoint');

export const SECRET_ROTATION_OVERLAP_MS = 24 * 60 * 60 * 1000;
export const PAUSE_THRESHOLD = 50;

export const endpointStream = (id: string): string => streamName('webhook-endpoint', id);

export interface EndpointState {
  id: string;
  deleted: boolean;
  status: 'active' | 'paused';
  sealedSecret: string;
  previousSealedSecret: string | null;
  previousSecretValidUntil: Date | null;
  /** The payload version it receives; null for an endpoint created before versions existed (the first one). */
  payloadVersion: string | null;
  /** The most deliveries a second it accepts; null: no limit. */
  rateLimitPerSecond: number | null;
}

export class EndpointNotFoundError extends Error {
  override name = 'EndpointNotFoundError';
}

export function evolve(state: EndpointState | null, event: EndpointEvent): EndpointState | null {
  switch (event.type) {
    case ENDPOINT_EVENTS.created:
      return {
        id: event.data.endpoint_id,
        deleted: false,
        status: 'active',
        sealedSecret: event.data.sealed_secret,
        previousSealedSecret: null,
        previousSecretValidUntil: null,
        payloadVersion: event.data.payload_version ?? null,
        rateLimitPerSecond: event.data.rate_limit_per_second ?? null,
      };
    case ENDPOINT_EVENTS.changed:
      return state;
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
          sealedSecret: event.data.sealed_secret,
          previousSealedSecret: event.data.previous_sealed_secret,
          previousSecretValidUntil: new Date(event.data.previous_secret_valid_until),
        }
      );
    case ENDPOINT_EVENTS.versionChanged:
      return state && { ...state, payloadVersion: event.data.payload_version };
    case ENDPOINT_EVENTS.rateLimitChanged:
      return state && { ...state, rateLimitPerSecond: event.data.rate_limit_per_second };
    case ENDPOINT_EVENTS.test:
      return state;
    default: {
      const unknown: never = event;
      throw new Error(`Unknown webhook endpoint event ${JSON.stringify(unknown)}`);
    }
  }
}

/** The endpoint its events describe; events read from the log go through toEndpointEvent first. */
export function fold(events: readonly EndpointEvent[]): EndpointState | null {
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
  /** Checked by the command against the versions there are. */
  payloadVersion: string;
  /** The most deliveries a second it accepts (1..1000, checked by the schema); null or absent: no limit. */
  rateLimitPerSecond?: number | null;
}

export function decideCreate(state: EndpointState | null, command: CreateEndpoint): EndpointCreated[] {
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
        payload_version: command.payloadVersion,
        ...(command.rateLimitPerSecond != null ? { rate_limit_per_second: command.rateLimitPerSecond } : {}),
      },
    },
  ];
}

export interface ChangeEndpoint {
  url: string;
  description: string | null;
  events: string[];
}

/** The endpoint's address, description and kinds as given (the command checked the address and the kinds). */
export function decideChange(state: EndpointState | null, command: ChangeEndpoint): EndpointChanged[] {
  const endpoint = existing(state);
  return [
    {
      type: ENDPOINT_EVENTS.changed,
      data: { endpoint_id: endpoint.id, url: command.url, description: command.description, events: command.events },
    },
  ];
}

/**
 * Moves the endpoint to another payload version (the command checked it is one): deliveries fanned out from now on
 * are rendered in it; those already made keep theirs. Nothing when it is on that version already. `firstVersion` is
 * what an endpoint created before versions existed is on.
 */
export function decideChangeVersion(
  state: EndpointState | null,
  command: { payloadVersion: string; firstVersion: string },
): EndpointVersionChanged[] {
  const endpoint = existing(state);
  const previous = endpoint.payloadVersion ?? command.firstVersion;
  if (previous === command.payloadVersion) return [];
  return [
    {
      type: ENDPOINT_EVENTS.versionChanged,
      data: { endpoint_id: endpoint.id, payload_version: command.payloadVersion, previous_payload_version: previous },
    },
  ];
}

/** Sets or removes (null) the endpoint's rate; nothing when it is that already. */
export function decideChangeRateLimit(
  state: EndpointState | null,
  command: { rateLimitPerSecond: number | null },
): EndpointRateLimitChanged[] {
  const endpoint = existing(state);
  if (endpoint.rateLimitPerSecond === command.rateLimitPerSecond) return [];
  return [
    {
      type: ENDPOINT_EVENTS.rateLimitChanged,
      data: {
        endpoint_id: endpoint.id,
        rate_limit_per_second: command.rateLimitPerSecond,
        previous_rate_limit_per_second: endpoint.rateLimitPerSecond,
      },
    },
  ];
}

export function decideDelete(state: EndpointState | null): EndpointDeleted[] {
  const endpoint = existing(state);
  return [{ type: ENDPOINT_EVENTS.deleted, data: { endpoint_id: endpoint.id } }];
}

/** Pausing is idempotent: a second worker crossing the threshold, or a deleted endpoint, appends nothing. */
export function decidePause(
  state: EndpointState | null,
  command: { reason: string; consecutiveFailures: number },
): EndpointPaused[] {
  if (!state || state.deleted || state.status === 'paused') return [];
  return [
    {
      type: ENDPOINT_EVENTS.paused,
      data: { endpoint_id: state.id, reason: command.reason, consecutive_failures: command.consecutiveFailures },
    },
  ];
}

export function decideResume(state: EndpointState | null): EndpointResumed[] {
  const endpoint = existing(state);
  if (endpoint.status === 'active') return [];
  return [{ type: ENDPOINT_EVENTS.resumed, data: { endpoint_id: endpoint.id } }];
}

/** The new secret signs from now on; the current one stays valid beside it for 24 hours. */
export function decideRotateSecret(
  state: EndpointState | null,
  command: { sealedSecret: string; now: Date },
): EndpointSecretRotated[] {
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
export function decideSendTest(
  state: EndpointState | null,
  command: { payload: Record<string, unknown> },
): EndpointTestSent[] {
  const endpoint = existing(state);
  return [{ type: ENDPOINT_EVENTS.test, data: { endpoint_id: endpoint.id, payload: command.payload } }];
}

/** The endpoint's commands as one decider input. */
export type EndpointCommand =
  | ({ type: 'create' } & CreateEndpoint)
  | ({ type: 'change' } & ChangeEndpoint)
  | { type: 'change_version'; payloadVersion: string; firstVersion: string }
  | { type: 'change_rate_limit'; rateLimitPerSecond: number | null }
  | { type: 'delete' }
  | { type: 'pause'; reason: string; consecutiveFailures: number }
  | { type: 'resume' }
  | { type: 'rotate_secret'; sealedSecret: string; now: Date }
  | { type: 'send_test'; payload: Record<string, unknown> };

/** decide(state, command) → events: the endpoint's decider, over the decisions above. */
export function decide(state: EndpointState | null, command: EndpointCommand): EndpointEvent[] {
  switch (command.type) {
    case 'create':
      return decideCreate(state, command);
    case 'change':
      return decideChange(state, command);
    case 'change_version':
      return decideChangeVersion(state, command);
    case 'change_rate_limit':
      return decideChangeRateLimit(state, command);
    case 'delete':
      return decideDelete(state);
    case 'pause':
      return decidePause(state, command);
    case 'resume':
      return decideResume(state);
    case 'rotate_secret':
      return decideRotateSecret(state, command);
    case 'send_test':
      return decideSendTest(state, command);
    default: {
      const unknown: never = command;
      throw new Error(`Unknown webhook endpoint command ${JSON.stringify(unknown)}`);
    }
  }
}
