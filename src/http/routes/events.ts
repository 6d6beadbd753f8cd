import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppServices } from '../../bootstrap.js';
import type { GlobalPosition } from '../../events/types.js';
import { decodeEventCursor, encodeEventCursor } from '../../webhooks/event-cursor.js';
import {
  EVENT_RETENTION_DAYS,
  findFeedEvent,
  kindsOf,
  positionOfEvent,
  readEventFeed,
} from '../../webhooks/event-feed.js';
import { ApiError, notFound, validationFailed } from '../errors.js';
import { refuseEmptyWindow } from '../windows.js';
import {
  EventIdParams,
  EventList,
  EventListQuery,
  SequencedDeliveryList,
  SequencedDeliveryQuery,
} from '../schemas/event.js';
import { WebhookIdParams } from '../schemas/webhook.js';
import { deliveriesBySequence } from '../../webhooks/delivery-sequence.js';
import {
  isPayloadVersion,
  payloadVersionOf,
  VERSION_HEADER,
  type PayloadVersion,
} from '../../webhooks/versions/index.js';
import { VersionHeaders } from '../schemas/event.js';
import { WebhookEvent } from '../schemas/event-data.js';
import { answer, errorResponses } from '../schemas/error.js';
import type { TypedApp } from '../typed-app.js';

const AUTH = { keys: 'secret', scope: 'events:read' } as const;
const DEFAULT_PAGE = 25;

/** GET /v1/events and GET /v1/events/{id}: the webhook events a receiver can recover what it missed from. */
export function registerEventRoutes(app: TypedApp, services: AppServices): void {
  registerListEvents(app, services);
  registerGetEvent(app, services);
  registerDeliveriesBySequence(app, services);
}

// Envelopes are sent as the JSON text their deliveries carry, byte for byte (a string with a JSON content type is
// sent as it is; the cast tells the type provider so).
const sendJson = (reply: FastifyReply, json: string) =>
  reply.type('application/json; charset=utf-8').send(json as never);

/**
 * The payload version an Events API request is answered in: the one its `Visa-CRM-Version` header names (the schema
 * checked it), else the key's workspace default. The answer says which in the same header.
 */
function versionOf(request: FastifyRequest, reply: FastifyReply): PayloadVersion {
  const named = request.headers[VERSION_HEADER.toLowerCase()];
  const version = isPayloadVersion(named) ? named : payloadVersionOf(request.auth!.workspace.settings.payload_version);
  void reply.header(VERSION_HEADER, version);
  return version;
}

function registerListEvents(app: TypedApp, services: AppServices): void {
  app.get(
    '/v1/events',
    {
      schema: {
        tags: ['events'],
        operationId: 'listEvents',
        headers: VersionHeaders,
        summary: `List the webhook events of the last ${EVENT_RETENTION_DAYS} days, as their deliveries carry them`,
        querystring: EventListQuery,
        response: {
          200: answer(EventList, 'A page of events in the chosen order; `next_cursor` is null on the last page'),
          ...errorResponses(400, 401, 402, 403, 429),
        },
      },
      config: { auth: AUTH },
    },
    async (request, reply) => {
      const auth = request.auth!;
      const q = request.query;
      const order = q.order ?? 'desc';
      const where = { tenantId: auth.workspace.id, sandbox: auth.sandbox, order };
      const { kinds, unknown } = kindsOf(
        q.types
          ? q.types
              .split(',')
              .map((s) => s.trim())
              .filter(Boolean)
          : [],
      );
      if (unknown.length) throw validationFailed({ types: `names no event kind: ${unknown.join(', ')}` });
      refuseEmptyWindow(q, 'created[gte]', 'created[lt]');
      const after = await startOf(services, where, q.cursor, q.starting_after);
      const page = await readEventFeed(services.pool, services.personalData, {
        ...where,
        kinds,
        createdGte: q['created[gte]'] ? new Date(q['created[gte]']) : undefined,
        createdLt: q['created[lt]'] ? new Date(q['created[lt]']) : undefined,
        after,
        limit: q.limit ?? DEFAULT_PAGE,
        now: services.now(),
        version: versionOf(request, reply),
      });
      const last = page.events[page.events.length - 1];
      const next = page.hasMore && last ? encodeEventCursor(services.secretBox, where, last.position) : null;
      const data = page.events.map((e) => e.envelope).join(',');
      return sendJson(reply, `{"data":[${data}],"has_more":${page.hasMore},"next_cursor":${JSON.stringify(next)}}`);
    },
  );
}

/** Where a page starts: after the cursor's position, or after the event `starting_after` names; one of them at most. */
async function startOf(
  services: AppServices,
  where: { tenantId: string; sandbox: boolean; order: 'asc' | 'desc' },
  cursor: string | undefined,
  startingAfter: string | undefined,
): Promise<GlobalPosition | undefined> {
  if (cursor !== undefined && startingAfter !== undefined)
    throw validationFailed({ cursor: 'give either cursor or starting_after, not both' });
  if (cursor !== undefined) {
    const position = decodeEventCursor(services.secretBox, where, cursor);
    if (!position)
      throw validationFailed({ cursor: 'is not a cursor this service gave for this workspace, mode and order' });
    return position;
  }
  if (startingAfter === undefined) return undefined;
  const position = await positionOfEvent(services.pool, { ...where, id: startingAfter });
  if (!position) throw validationFailed({ starting_after: 'names no event of this workspace and mode' });
  return position;
}

function registerGetEvent(app: TypedApp, services: AppServices): void {
  app.get(
    '/v1/events/:id',
    {
      schema: {
        tags: ['events'],
        operationId: 'getEvent',
        headers: VersionHeaders,
        summary: 'Read one webhook event, as its deliveries carry it',
        params: EventIdParams,
        response: {
          200: answer(WebhookEvent, 'The event'),
          ...errorResponses(401, 402, 403, 404, 429),
        },
      },
      config: { auth: AUTH },
    },
    async (request, reply) => {
      const auth = request.auth!;
      const found = await findFeedEvent(services.pool, services.personalData, {
        tenantId: auth.workspace.id,
        sandbox: auth.sandbox,
        id: request.params.id,
        now: services.now(),
        version: versionOf(request, reply),
      });
      if (found === 'expired')
        throw new ApiError(404, 'not_found', `Events are kept for ${EVENT_RETENTION_DAYS} days; this one is older`);
      if (!found) throw notFound('event');
      return sendJson(reply, found.envelope);
    },
  );
}

/** GET /v1/webhooks/{id}/deliveries: a receiver lists what was sent to it from a sequence number on, with each state. */
function registerDeliveriesBySequence(app: TypedApp, services: AppServices): void {
  app.get(
    '/v1/webhooks/:id/deliveries',
    {
      schema: {
        tags: ['webhooks'],
        operationId: 'listWebhookDeliveriesBySequence',
        summary: 'List the deliveries numbered for an endpoint from a sequence number on, with their states',
        params: WebhookIdParams,
        querystring: SequencedDeliveryQuery,
        response: {
          200: answer(SequencedDeliveryList, 'The deliveries in sequence order, one per number'),
          ...errorResponses(400, 401, 402, 403, 404, 429),
        },
      },
      config: { auth: { ...AUTH, feature: 'webhooks' } },
    },
    async (request) => {
      const auth = request.auth!;
      const page = await deliveriesBySequence(services.pool, {
        tenantId: auth.workspace.id,
        sandbox: auth.sandbox,
        endpointId: request.params.id,
        sequenceGte: request.query.sequence_gte ?? 1,
        limit: request.query.limit ?? DEFAULT_PAGE,
        now: services.now(),
      });
      if (!page) throw notFound('webhook endpoint');
      return { data: page.data, has_more: page.hasMore };
    },
  );
}
