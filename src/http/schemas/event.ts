import { Type } from 'typebox';
import { StringEnum } from '../../shared/enums.js';
import { SEQUENCED_STATES } from '../../webhooks/delivery-sequence.js';
import { WebhookEvent } from './event-data.js';
import { PAYLOAD_VERSIONS, VERSION_HEADER } from '../../webhooks/versions/index.js';
import { RETRY_DELAYS_MS } from '../../webhooks/retry-schedule.js';

/** The Events API's request header naming the payload version the events are answered in. */
export const VersionHeaders = Type.Object({
  [VERSION_HEADER.toLowerCase()]: Type.Optional(
    StringEnum(PAYLOAD_VERSIONS, {
      description:
        "the payload version to answer in (the answer's own `Visa-CRM-Version` header says which it used); without it, the workspace's default. The versions: /docs/payload-versions",
    }),
  ),
});

/** GET /v1/events: a page of webhook events, filtered by kind and creation time. */
export const EventListQuery = Type.Object(
  {
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 25 })),
    order: Type.Optional(
      Type.Union([Type.Literal('desc'), Type.Literal('asc')], {
        default: 'desc',
        description: '`desc`: newest first (the default); `asc`: oldest first, for catching up in order',
      }),
    ),
    cursor: Type.Optional(Type.String({ maxLength: 200, description: 'the `next_cursor` of the previous page' })),
    starting_after: Type.Optional(
      Type.String({
        format: 'uuid',
        description: 'an event id: the page starts right after it in the chosen order (for following the stream)',
      }),
    ),
    types: Type.Optional(
      Type.String({
        maxLength: 500,
        description: 'comma-separated event kinds and prefixes ending in `*`, for example `lead.created,application.*`',
      }),
    ),
    'created[gte]': Type.Optional(
      Type.String({ format: 'date-time', description: 'created at or after this instant' }),
    ),
    'created[lt]': Type.Optional(
      Type.String({
        format: 'date-time',
        description: 'created before this instant; after `created[gte]` when both are given (an empty window is a 400)',
      }),
    ),
  },
  { additionalProperties: false },
);

export const EventList = Type.Object(
  {
    data: Type.Array(WebhookEvent, { description: 'each event exactly as its deliveries carry it' }),
    has_more: Type.Boolean(),
    next_cursor: Type.Union([Type.String(), Type.Null()], { description: 'null on the last page' }),
  },
  { additionalProperties: false },
);

export const EventIdParams = Type.Object({ id: Type.String({ format: 'uuid' }) }, { additionalProperties: false });

/** GET /v1/webhooks/{id}/deliveries: what the fan-out numbered for an endpoint, from a sequence number on. */
export const SequencedDeliveryQuery = Type.Object(
  {
    sequence_gte: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: Number.MAX_SAFE_INTEGER,
        default: 1,
        description: 'the first sequence number to list',
      }),
    ),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 25 })),
  },
  { additionalProperties: false },
);

/** The retry schedule, as each delivery's answer repeats it. */
export const RetrySchedule = Type.Array(Type.Integer({ minimum: 1 }), {
  description: `seconds after a failed attempt until the next: ${RETRY_DELAYS_MS.map((ms) => ms / 1000).join(', ')} (each moved by up to 5% either way); after the last retry fails the delivery is failed`,
});

const NullableDateTime = Type.Union([Type.String({ format: 'date-time' }), Type.Null()]);

export const SequencedDelivery = Type.Object(
  {
    id: Type.String({ format: 'uuid', description: 'the delivery id (X-Service-Delivery of its first attempt)' }),
    event_id: Type.String({ format: 'uuid' }),
    event: Type.String({ description: 'the event kind' }),
    sequence: Type.Integer({ minimum: 1, description: "the endpoint's number for it (X-Service-Sequence)" }),
    previous_event_id: Type.Union([Type.String({ format: 'uuid' }), Type.Null()], {
      description: 'the event sent to the endpoint just before (X-Service-Previous-Event); null for the first',
    }),
    state: StringEnum(SEQUENCED_STATES, {
      description:
        'succeeded (it or a resend was acknowledged), queued (not tried yet), retrying (failed, tried again at next_attempt_at), waiting (held while the endpoint is paused), failed (every retry failed), cancelled (the endpoint was deleted first)',
    }),
    attempts: Type.Integer({ minimum: 0 }),
    next_attempt_at: NullableDateTime,
    throttled_until: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
      description:
        "due but held back by the endpoint's rate (`rate_limit_per_second`): the earliest time the rate lets its next delivery go. The state stays queued or retrying; a held delivery is not an attempt and not a failure. Null otherwise",
    }),
    last_response_status: Type.Union([Type.Integer(), Type.Null()]),
    last_error: Type.Union([Type.String(), Type.Null()]),
    created_at: Type.String({ format: 'date-time' }),
    payload_version: StringEnum(PAYLOAD_VERSIONS, {
      description: 'the payload version its body is rendered in (its retries and resends keep it)',
    }),
    retry_schedule_seconds: RetrySchedule,
  },
  { additionalProperties: false },
);

export const SequencedDeliveryList = Type.Object(
  {
    data: Type.Array(SequencedDelivery),
    has_more: Type.Boolean({ description: 'more follow: ask again from the last sequence number plus one' }),
  },
  { additionalProperties: false },
);
