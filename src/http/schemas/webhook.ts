import { Type, type Static } from 'typebox';
import { EVENT_KINDS, StringEnum } from '../../shared/enums.js';
import { WorkspaceRef } from '../../schemas/workspace-ref.js';
import { PAYLOAD_VERSIONS } from '../../webhooks/versions/index.js';

/** An endpoint's payload version (src/webhooks/versions; the changelog is served at /docs/payload-versions). */
export const PayloadVersionField = StringEnum(PAYLOAD_VERSIONS, {
  description:
    'the payload version its deliveries are rendered in, a date; new endpoints get the newest. The versions and what each changed: /docs/payload-versions',
});

/** An endpoint's rate: the most deliveries a second it accepts, or null for no limit (Svix's `rate_limit`). */
export const RateLimitField = Type.Union([Type.Integer({ minimum: 1, maximum: 1000 }), Type.Null()], {
  description:
    'the most deliveries a second the endpoint accepts, 1 to 1000, counted over any one-second window across every worker; null: no limit. Deliveries the rate holds back wait (status pending, `throttled_until`), they are not attempts and not failures',
});

const DateTime = Type.String({ format: 'date-time' });
const NullableDateTime = Type.Union([DateTime, Type.Null()]);

export const WebhookEndpoint = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    url: Type.String(),
    description: Type.Union([Type.String(), Type.Null()]),
    events: Type.Array(StringEnum(EVENT_KINDS), { description: 'subscribed event kinds' }),
    payload_version: PayloadVersionField,
    rate_limit_per_second: RateLimitField,
    status: StringEnum(['active', 'paused'] as const),
    consecutive_failures: Type.Integer(),
    paused_reason: Type.Union([Type.String(), Type.Null()]),
    paused_at: NullableDateTime,
    previous_secret_valid_until: NullableDateTime,
    created_at: DateTime,
    updated_at: DateTime,
  },
  { additionalProperties: false },
);
export type WebhookEndpoint = Static<typeof WebhookEndpoint>;

export const WebhookEndpointCreate = Type.Object(
  {
    url: Type.String({
      minLength: 1,
      maxLength: 2048,
      description: 'public HTTPS address; internal networks and user names or passwords are refused',
    }),
    description: Type.Optional(Type.Union([Type.String({ maxLength: 500 }), Type.Null()])),
    events: Type.Array(StringEnum(EVENT_KINDS), {
      minItems: 1,
      // Every kind at most once: subscribing to all of them is allowed, a kind twice is not.
      maxItems: EVENT_KINDS.length,
      uniqueItems: true,
    }),
    send_test: Type.Optional(
      Type.Boolean({
        description:
          'true: once the endpoint is made, send it a webhook.test event (as POST /v1/webhooks/{id}/test does); its id is `test_event_id` in the answer',
      }),
    ),
    payload_version: Type.Optional(PayloadVersionField),
    rate_limit_per_second: Type.Optional(RateLimitField),
  },
  { additionalProperties: false },
);
export type WebhookEndpointCreate = Static<typeof WebhookEndpointCreate>;

export const WebhookEndpointCreated = Type.Object(
  {
    ...WebhookEndpoint.properties,
    secret: Type.String({ pattern: '^whsec_[A-Za-z0-9]{32}$', description: 'shown only in this answer' }),
    test_event_id: Type.Optional(
      Type.String({ format: 'uuid', description: 'with `send_test: true` only: the webhook.test event sent to it' }),
    ),
  },
  { additionalProperties: false },
);

/** PATCH /v1/webhooks/{id}: what an owner changes through the API (the payload version, the rate); one at least. */
export const WebhookEndpointUpdate = Type.Object(
  { payload_version: Type.Optional(PayloadVersionField), rate_limit_per_second: Type.Optional(RateLimitField) },
  { additionalProperties: false, minProperties: 1 },
);
export type WebhookEndpointUpdate = Static<typeof WebhookEndpointUpdate>;

export const WebhookEndpointList = Type.Object({ data: Type.Array(WebhookEndpoint) }, { additionalProperties: false });

export const WebhookIdParams = Type.Object({ id: Type.String({ format: 'uuid' }) }, { additionalProperties: false });

// Admin (workspace UI) shapes.

export const AdminEndpointParams = Type.Object(
  { workspace: WorkspaceRef, id: Type.String({ format: 'uuid' }) },
  { additionalProperties: false },
);
export const AdminDeliveryParams = Type.Object(
  { workspace: WorkspaceRef, id: Type.String({ format: 'uuid' }), deliveryId: Type.String({ format: 'uuid' }) },
  { additionalProperties: false },
);

export const AdminWebhookEndpoint = Type.Object(
  { ...WebhookEndpoint.properties, mode: StringEnum(['live', 'test'] as const) },
  { additionalProperties: false },
);
export const AdminWebhookEndpointList = Type.Object(
  { data: Type.Array(AdminWebhookEndpoint) },
  { additionalProperties: false },
);
export const AdminRotatedSecret = Type.Object(
  {
    endpoint: WebhookEndpoint,
    secret: Type.String({
      pattern: '^whsec_[A-Za-z0-9]{32}$',
      description: 'the new secret, shown only in this answer',
    }),
  },
  { additionalProperties: false },
);

export const DeliveryListQuery = Type.Object(
  {
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 25 })),
    cursor: Type.Optional(Type.String({ format: 'uuid' })),
  },
  { additionalProperties: false },
);

const Headers = Type.Record(Type.String(), Type.Union([Type.String(), Type.Array(Type.String())]));

export const DeliveryLogEntry = Type.Object(
  {
    id: Type.String({ format: 'uuid', description: 'delivery id (X-Service-Delivery)' }),
    event_id: Type.String({ format: 'uuid' }),
    event: Type.String(),
    status: StringEnum(['pending', 'succeeded', 'failed', 'cancelled'] as const),
    attempts: Type.Integer(),
    next_attempt_at: NullableDateTime,
    throttled_until: Type.Union([DateTime, Type.Null()], {
      description:
        "pending and due, but held back by the endpoint's rate (`rate_limit_per_second`): the earliest time the rate lets the endpoint's next delivery go. Not an attempt and not a failure; null otherwise",
    }),
    resend_of: Type.Union([Type.String({ format: 'uuid' }), Type.Null()]),
    superseded_by: Type.Union([Type.String({ format: 'uuid' }), Type.Null()], {
      description: "the manual resend whose success ended this delivery's retries (status cancelled)",
    }),
    created_at: DateTime,
    updated_at: DateTime,
    request_body: Type.String(),
    log: Type.Array(
      Type.Object(
        {
          attempt: Type.Integer(),
          attempted_at: DateTime,
          request_headers: Type.Record(Type.String(), Type.String()),
          response_status: Type.Union([Type.Integer(), Type.Null()]),
          response_headers: Type.Union([Headers, Type.Null()]),
          response_body: Type.Union([Type.String(), Type.Null()]),
          duration_ms: Type.Integer(),
          error: Type.Union([Type.String(), Type.Null()]),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);
export const DeliveryList = Type.Object(
  { data: Type.Array(DeliveryLogEntry), next_cursor: Type.Union([Type.String(), Type.Null()]) },
  { additionalProperties: false },
);

/** A resend's optional body: the payload version to render it in instead of the original delivery's. */
export const ResendRequest = Type.Union([
  Type.Object({ payload_version: Type.Optional(PayloadVersionField) }, { additionalProperties: false }),
  Type.Null(),
]);

export const ResendAnswer = Type.Object(
  { id: Type.String({ format: 'uuid' }), event_id: Type.String({ format: 'uuid' }) },
  { additionalProperties: false },
);
export const TestAnswer = Type.Object({ event_id: Type.String({ format: 'uuid' }) }, { additionalProperties: false });

/** The body of a replay: a window of event times, optionally some of the endpoint's kinds, optionally only the failed. */
export const ReplayBody = Type.Object(
  {
    since: Type.String({
      format: 'date-time',
      description: 'replay events created at or after this instant (RFC 3339); at most 30 days ago',
    }),
    until: Type.Optional(
      Type.String({
        format: 'date-time',
        description: 'and before this instant (RFC 3339), after `since`; default (and at most) now',
      }),
    ),
    kinds: Type.Optional(
      Type.Array(StringEnum(EVENT_KINDS), {
        minItems: 1,
        maxItems: EVENT_KINDS.length,
        description: 'only these kinds, each one the endpoint subscribes to; default every kind it subscribes to',
      }),
    ),
    only_failed: Type.Optional(
      Type.Boolean({
        description:
          'only events whose deliveries to this endpoint failed (for good, or their last attempt did) and none ' +
          'succeeded or is queued: what the console’s "retry failed since" sends',
      }),
    ),
  },
  { additionalProperties: false },
);

export const ReplaySummary = Type.Object(
  {
    id: Type.String({ format: 'uuid', description: 'the replay' }),
    endpoint_id: Type.String({ format: 'uuid' }),
    since: DateTime,
    until: DateTime,
    kinds: Type.Array(Type.String(), { description: 'the kinds replayed' }),
    only_failed: Type.Boolean(),
    queued: Type.Integer({
      minimum: 0,
      maximum: 10_000,
      description: 'deliveries queued: one per event of the window, in event order',
    }),
    created_at: DateTime,
  },
  { additionalProperties: false },
);
