import type { TSchema } from 'typebox';
import type { EventKind } from '../../shared/enums.js';
import { Invoice, Payment, Refund } from './invoice.js';
import { Task } from './task.js';
import { Document } from './document.js';
import { CURRENT_PAYLOAD_VERSION, SINCE_2026_11_29 } from '../../webhooks/versions/index.js';

/** The envelope fields of the current payload version beyond the first's (src/webhooks/versions/schemas.ts). */
const SINCE_FIRST_VERSION = JSON.parse(JSON.stringify(SINCE_2026_11_29)) as Record<string, unknown>;

/**
 * The `data` of the webhook events whose data is a workspace resource in its public shape: the resource's schema,
 * named as an OpenAPI component, and the events that carry it. Each becomes an entry of the public document's
 * `webhooks` (OpenAPI 3.1), whose delivery body refers to the component.
 */
export const EVENT_DATA: { event: EventKind; component: string; schema: TSchema; summary: string }[] = [
  {
    event: 'document.uploaded',
    component: 'Document',
    schema: Document,
    summary: 'A document was uploaded and passed the virus scan',
  },
  { event: 'document.rejected', component: 'Document', schema: Document, summary: 'Staff rejected a document' },
  { event: 'invoice.issued', component: 'Invoice', schema: Invoice, summary: 'An invoice was issued' },
  {
    event: 'payment.received',
    component: 'Payment',
    schema: Payment,
    summary: 'A payment was recorded against an invoice',
  },
  { event: 'refund.paid', component: 'Refund', schema: Refund, summary: 'A refund of a payment was paid out' },
  { event: 'task.overdue', component: 'Task', schema: Task, summary: "A task's due time passed while it was open" },
];

/** Plain JSON of a TypeBox schema (its symbols dropped), as a document embeds it. */
const plain = (schema: TSchema): Record<string, unknown> =>
  JSON.parse(JSON.stringify(schema)) as Record<string, unknown>;

export function eventDataComponents(): Record<string, Record<string, unknown>> {
  return Object.fromEntries(EVENT_DATA.map((e) => [e.component, plain(e.schema)]));
}

/** The `webhooks` object: one POST per event, its body the envelope with `data` the component. */
const header = (name: string, description: string, required = true, schema: object = { type: 'string' }) => ({
  name,
  in: 'header',
  required,
  description,
  schema,
});

/** The headers of every delivery (src/subscribers/webhook-delivery-worker.ts, `deliveryHeaders`). */
const DELIVERY_HEADERS = [
  header('X-Service-Event', 'the event kind'),
  header('X-Service-Delivery', 'the delivery id (a resend has its own)', true, { type: 'string', format: 'uuid' }),
  header('X-Service-Signature', '`t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`, one v1 per valid secret'),
  header(
    'X-Service-Sequence',
    "this endpoint's number for the delivery: 1, 2, 3 … in the order the fan-out assigned them, never reused; a resend keeps its number. A number skipped since the last one received is a missed event: fetch it from GET /v1/events or GET /v1/webhooks/{id}/deliveries?sequence_gte=",
    true,
    { type: 'string', pattern: '^[1-9][0-9]*$' },
  ),
  header(
    'X-Service-Previous-Event',
    'the id of the event this endpoint was sent just before this one (absent on its first delivery)',
    false,
    { type: 'string', format: 'uuid' },
  ),
  header('webhook-id', 'Standard Webhooks: the event id', true, { type: 'string', format: 'uuid' }),
  header('webhook-timestamp', 'Standard Webhooks: unix seconds'),
  header(
    'webhook-signature',
    'Standard Webhooks: `v1,<base64 HMAC-SHA256 of "<id>.<t>.<body>">`, one per valid secret',
  ),
];

export function eventWebhooks(): Record<string, unknown> {
  return Object.fromEntries(
    EVENT_DATA.map((e) => [
      e.event,
      {
        post: {
          operationId: `on${e.event.replace(/(^|[._])(\w)/g, (_m, _s, c: string) => c.toUpperCase())}`,
          summary: e.summary,
          description: `Delivered to endpoints subscribed to \`${e.event}\`, signed like every delivery; \`data\` is the ${e.component}. The body as payload version ${CURRENT_PAYLOAD_VERSION} has it; older versions: /docs/payload-versions.`,
          tags: ['webhooks'],
          security: [],
          parameters: DELIVERY_HEADERS,
          requestBody: {
            required: true,
            content: {
              'application/json': {
                schema: {
                  type: 'object',
                  additionalProperties: false,
                  required: ['id', 'event', 'tenant_id', 'created_at', ...Object.keys(SINCE_FIRST_VERSION), 'data'],
                  properties: {
                    id: {
                      type: 'string',
                      format: 'uuid',
                      description: 'event id; the same on every attempt and resend',
                    },
                    event: { type: 'string', const: e.event },
                    tenant_id: { type: 'string', format: 'uuid' },
                    created_at: { type: 'string', format: 'date-time' },
                    ...SINCE_FIRST_VERSION,
                    data: { $ref: `#/components/schemas/${e.component}` },
                  },
                },
              },
            },
          },
          responses: { '200': { description: 'Acknowledged: any 2xx within 10 seconds' } },
        },
      },
    ]),
  );
}
