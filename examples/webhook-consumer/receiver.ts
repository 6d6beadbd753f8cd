// A webhook receiver typed by the service's own API document: api.ts is what openapi-typescript generates from
// /openapi.json (`npx openapi-typescript https://<service>/openapi.json -o api.ts`), and nothing here is typed by hand.
// `npm run typecheck` compiles this folder, and test/examples/webhook-consumer.test.ts regenerates api.ts from the
// served document and fails if it differs, so the example keeps compiling against the document the service serves.
//
//   WEBHOOK_SECRET=whsec_... PORT=8443 node --import ./scripts/typescript-resolve.mjs examples/webhook-consumer/receiver.ts
//
// It verifies each delivery's Standard Webhooks signature over the raw body, then narrows the event by its kind:
// `event` tells the shapes of `data` apart, so each case below sees its own fields, and a kind added to the
// document makes the `never` check fail to compile until it is handled.
import http from 'node:http';
import { Webhook } from 'standardwebhooks';
import type { components, operations } from './api.js';

export type WebhookEvent = components['schemas']['WebhookEvent'];
type EventPage = operations['listEvents']['responses'][200]['content']['application/json'];

/** One line about an event, from fields only its kind has. */
export function describe(event: WebhookEvent): string {
  switch (event.event) {
    case 'lead.created':
    case 'lead.assigned':
    case 'lead.converted':
    case 'lead.lost':
      return `${event.event} ${event.data.id}: ${event.data.full_name} at stage ${event.data.stage.key}, owner ${event.data.owner?.email ?? 'none'}`;
    case 'lead.updated':
      return `lead ${event.data.id} changed ${event.data.changed_fields.join(', ')}`;
    case 'application.stage_changed':
      return `application ${event.data.case_ref} moved to ${event.data.stage_change.to_stage_key ?? '?'}`;
    case 'application.module_updated':
      return `application ${event.data.case_ref}: module ${event.data.module_event.key ?? '?'} ${event.data.module_event.kind ?? ''}`;
    case 'application.outcome':
      return `application ${event.data.case_ref} outcome ${event.data.outcome ?? 'none'}`;
    case 'document.uploaded':
    case 'document.rejected':
      return `document ${event.data.filename} (${event.data.size} bytes) is ${event.data.status}`;
    case 'invoice.issued':
      return `invoice ${event.data.number}: ${event.data.total} ${event.data.currency}`;
    case 'payment.received':
      return `payment of ${event.data.amount} ${event.data.currency}`;
    case 'refund.paid':
      return `refund of ${event.data.amount} paid`;
    case 'task.overdue':
      return `task "${event.data.title}" overdue since ${event.data.due_at ?? '?'}`;
    case 'webhook.test':
      return `test event for ${event.data.url} (${event.data.events.length} kinds subscribed)`;
    default: {
      const unhandled: never = event;
      return `unknown event ${JSON.stringify(unhandled)}`;
    }
  }
}

/** Events missed while down, from the Events API (scope events:read), oldest first, typed as the deliveries are. */
export async function catchUp(baseUrl: string, key: string, after: string): Promise<WebhookEvent[]> {
  const response = await fetch(`${baseUrl}/v1/events?order=asc&starting_after=${after}`, {
    headers: { authorization: `Bearer ${key}` },
  });
  if (!response.ok) throw new Error(`GET /v1/events answered ${response.status}`);
  const page = (await response.json()) as EventPage;
  return page.data;
}

/** Verifies a delivery's Standard Webhooks headers over the raw body; the body is then one of the documented events. */
export function verified(secret: string, body: string, headers: http.IncomingHttpHeaders): WebhookEvent {
  const header = (name: string) => String(headers[name] ?? '');
  return new Webhook(secret).verify(body, {
    'webhook-id': header('webhook-id'),
    'webhook-timestamp': header('webhook-timestamp'),
    'webhook-signature': header('webhook-signature'),
  }) as WebhookEvent;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const secret = process.env.WEBHOOK_SECRET ?? '';
  if (!secret.startsWith('whsec_')) throw new Error('Set WEBHOOK_SECRET to the endpoint secret (whsec_...)');
  http
    .createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        try {
          const event = verified(secret, Buffer.concat(chunks).toString('utf8'), request.headers);
          response.writeHead(204).end();
          console.log(describe(event));
        } catch {
          response.writeHead(400).end();
        }
      });
    })
    .listen(Number(process.env.PORT ?? 8443));
}
