import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import t from 'tap';
import { fireDueTimers } from '../../src/commands/tasks/fire-timers.js';
import { envelopeComponent } from '../../src/http/schemas/event-data.js';
import { EVENT_KINDS, type EventKind } from '../../src/shared/enums.js';
import { verifyWebhook, type WebhookEnvelope } from '../../src/webhooks/verify.js';
import { clamdSkipReason, pdfFile } from '../support/clamd.js';
import { servedDocument } from '../support/openapi.js';
import { documentWebhookHarness } from '../documents/support.js';
import { waitFor } from './support/receiver.js';

/*
 * A real delivery of every webhook kind, made through the API, the admin interface and the task timer and received
 * by an HTTPS receiver on loopback, validated with ajv against the schema the public document gives its kind; and the
 * Events API's answers against the document's WebhookEvent. The kinds are EVENT_KINDS: a kind added there without a
 * way to make it here fails the wait below by name.
 */

type Schemas = Record<string, unknown>;

/** ajv (JSON Schema 2020-12, OpenAPI 3.1's dialect) over the document's components, as `$defs` of one schema. */
function validators(components: Schemas): (name: string) => ValidateFunction {
  const ajv = new Ajv2020({ allErrors: true, strict: true });
  addFormats.default(ajv);
  const defs = JSON.parse(JSON.stringify(components).replaceAll('#/components/schemas/', '#/$defs/')) as Schemas;
  ajv.addSchema({ $id: 'https://visa-crm.test/components', $defs: defs });
  return (name) => ajv.compile({ $ref: `https://visa-crm.test/components#/$defs/${name}` });
}

const problems = (validate: ValidateFunction) =>
  (validate.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message ?? ''}`);

t.test(
  'a real delivery of every kind validates against the schema the public document gives it',
  {
    skip: clamdSkipReason(),
  },
  async (t) => {
    t.setTimeout(170_000);
    const { h, upload } = await documentWebhookHarness(t);
    // Every kind at once: the subscription's limit is the number of kinds.
    const endpoint = await h.createEndpoint({
      url: h.receiver.url('127.0.0.1', '/every-kind'),
      events: [...EVENT_KINDS],
    });
    await h.startWorkers({ documentScanIntervalMs: 50 });
    const ok = async (response: Response, status: number, what: string) => {
      const text = await response.text();
      if (response.status !== status) throw new Error(`${what}: ${response.status} ${text}`);
      return JSON.parse(text) as Record<string, unknown> & { id: string };
    };
    const createLead = async (email: string) =>
      ok(
        await h.request('/v1/leads', {
          method: 'POST',
          key: h.ws.live,
          json: { full_name: 'Every Kind', email, consent: true },
        }),
        201,
        'lead',
      );
    const patch = (id: string, json: unknown) =>
      h.request(`/v1/leads/${id}`, { method: 'PATCH', key: h.ws.live, json }).then((r) => ok(r, 200, 'patch'));

    // Leads: created, assigned, updated; a second one lost; the first converted (its case opens at a stage).
    const lead = await createLead('every.kind@example.org');
    await patch(lead.id, { owner_email: 'asha@northstar.example' });
    await patch(lead.id, { temperature: 'hot' });
    const lost = await createLead('every.kind.lost@example.org');
    await patch(lost.id, { stage_key: 'lost', lost_reason_key: 'not_reachable' });
    const application = await ok(await h.admin('POST', `/leads/${lead.id}/convert`), 201, 'convert');

    // The case: a module updated, an outcome.
    const base = `/applications/${application.id}`;
    await ok(await h.admin('POST', `${base}/modules/sop/select`), 200, 'select');
    await ok(await h.admin('PUT', `${base}/modules/sop/state`, { state: 'updated' }), 200, 'module');
    await ok(await h.admin('POST', `${base}/outcome`, { outcome: 'granted' }), 200, 'outcome');

    // A task the timer finds overdue.
    const due = new Date(Date.now() + 60_000).toISOString();
    await ok(await h.admin('POST', '/tasks', { lead_id: lead.id, title: 'Call back', due_at: due }), 201, 'task');
    t.equal((await fireDueTimers(h.pool, h.services.store, new Date(Date.now() + 120_000))).fired, 1, 'task overdue');

    // An invoice, paid, part refunded, the refund paid out.
    const invoice = await ok(
      await h.admin('POST', '/invoices', {
        lead_id: lead.id,
        currency: 'INR',
        line_items: [{ description: 'Counselling', quantity: 1, unit_amount: 100_000 }],
        tax_rate_basis_points: 0,
        due_date: '2026-12-31',
      }),
      201,
      'invoice',
    );
    const paid = (await ok(
      await h.admin('POST', `/invoices/${invoice.id}/payments`, {
        amount: 100_000,
        currency: 'INR',
        method: 'upi',
        reference: 'UTR-1',
      }),
      201,
      'payment',
    )) as unknown as { payments: { id: string }[] };
    const refunded = (await ok(
      await h.admin('POST', `/invoices/${invoice.id}/payments/${paid.payments[0]!.id}/refunds`, {
        amount: 10_000,
        reason: 'goodwill',
      }),
      201,
      'refund',
    )) as unknown as { payments: { refunds: { id: string }[] }[] };
    const refund = refunded.payments[0]!.refunds[0]!.id;
    await ok(await h.admin('POST', `/invoices/${invoice.id}/refunds/${refund}/paid`), 200, 'refund paid');

    // A document scanned clean by clamd, then rejected.
    const document = await ok(
      await upload({ lead_id: lead.id, type: 'passport', file: { bytes: pdfFile('kinds'), name: 'p.pdf' } }),
      201,
      'upload',
    );
    await ok(await h.admin('POST', `/documents/${document.id}/reject`, { reason: 'Unreadable' }), 200, 'reject');

    // And the endpoint's test event.
    await ok(await h.admin('POST', `/webhooks/${endpoint.id}/test`), 202, 'webhook.test');

    const received = () => new Set(h.receiver.requests.map((r) => String(r.headers['x-service-event'])));
    const missing = () => EVENT_KINDS.filter((kind) => !received().has(kind));
    await waitFor(() => missing().length === 0, 'a delivery of every kind', 60_000).catch((error: Error) => {
      throw new Error(`${error.message}; none of ${missing().join(', ')}`);
    });

    const document_ = await servedDocument(h, '/openapi.json');
    const schemaOf = validators((document_ as unknown as { components: { schemas: Schemas } }).components.schemas);
    const byKind = new Map(EVENT_KINDS.map((kind) => [kind, schemaOf(envelopeComponent(kind))]));
    const anyEvent = schemaOf('WebhookEvent');
    const envelopes: WebhookEnvelope[] = [];
    for (const request of h.receiver.requests) {
      const envelope = verifyWebhook({
        body: request.body,
        signature: request.headers['x-service-signature'],
        secret: endpoint.secret,
      });
      envelopes.push(envelope);
      const kind = envelope.event as EventKind;
      t.equal(request.headers['x-service-event'], kind, `${kind}: the header names the body's kind`);
      const validate = byKind.get(kind)!;
      const valid = validate(envelope);
      t.same(valid ? [] : problems(validate), [], `${kind} (${envelope.id}) is a ${envelopeComponent(kind)}`);
      t.ok(anyEvent(envelope), `${kind}: and as a WebhookEvent`);
    }
    t.same(
      EVENT_KINDS.filter((kind) => !envelopes.some((e) => e.event === kind)),
      [],
      'every kind was delivered and checked',
    );

    // The Events API answers the same envelopes, each a WebhookEvent of the listEvents answer's schema.
    const page = await ok(await h.request('/v1/events?limit=100', { key: h.ws.live }), 200, 'events');
    const pageData = page.data as WebhookEnvelope[];
    for (const event of pageData) t.ok(anyEvent(event), `GET /v1/events: ${event.event} is a WebhookEvent`);
    for (const envelope of envelopes.filter((e) => e.event !== 'webhook.test'))
      t.same(
        pageData.find((e) => e.id === envelope.id),
        envelope,
        `GET /v1/events lists ${envelope.event} as delivered`,
      );
    const one = await ok(await h.request(`/v1/events/${envelopes[0]!.id}`, { key: h.ws.live }), 200, 'event');
    t.ok(anyEvent(one), 'GET /v1/events/{id} answers a WebhookEvent');
  },
);
