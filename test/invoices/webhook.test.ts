import t from 'tap';
import type { TSchema } from 'typebox';
import { Value } from 'typebox/value';
import type { Invoice } from '../../src/domain/invoices/index.js';
import {
  Invoice as InvoiceSchema,
  Payment as PaymentSchema,
  Refund as RefundSchema,
} from '../../src/http/schemas/invoice.js';
import { verifyWebhook } from '../../src/webhooks/verify.js';
import { webhookHarness } from '../webhooks/support/harness.js';
import { waitFor } from '../webhooks/support/receiver.js';

t.test(
  'invoice.issued, payment.received and refund.paid reach a real HTTPS receiver, signed, with documented data',
  async (t) => {
    const h = await webhookHarness(t);
    const endpoint = await h.createEndpoint({
      url: h.receiver.url('127.0.0.1', '/billing-hooks'),
      events: ['invoice.issued', 'payment.received', 'refund.paid'],
    });
    await h.startWorkers();
    const lead = await h.request('/v1/leads', {
      method: 'POST',
      key: h.ws.live,
      json: { full_name: 'Billing Hook', email: 'billing.hook@example.org', consent: true },
    });
    const leadId = ((await lead.json()) as { id: string }).id;

    const issued = (await (
      await h.admin('POST', '/invoices', {
        lead_id: leadId,
        currency: 'KWD',
        line_items: [{ description: 'Consultation', quantity: 2, unit_amount: 12_345 }],
        tax_rate_basis_points: 500,
        due_date: '2026-12-31',
      })
    ).json()) as Invoice;
    const paid = (await (
      await h.admin('POST', `/invoices/${issued.id}/payments`, { amount: 20_000, currency: 'KWD', method: 'card' })
    ).json()) as Invoice;
    const payment = paid.payments[0]!;
    const refunded = (await (
      await h.admin('POST', `/invoices/${issued.id}/payments/${payment.id}/refunds`, {
        amount: 5_000,
        reason: 'Goodwill',
      })
    ).json()) as Invoice;
    const refund = refunded.payments[0]!.refunds[0]!;
    const final = (await (await h.admin('POST', `/invoices/${issued.id}/refunds/${refund.id}/paid`)).json()) as Invoice;

    const requests = await waitFor(
      () => (h.receiver.requests.length >= 3 ? h.receiver.requests : null),
      'three deliveries',
    );
    const byEvent = new Map(
      requests.map((r) => {
        const envelope = verifyWebhook({
          body: r.body,
          signature: r.headers['x-service-signature'],
          secret: endpoint.secret,
        });
        return [envelope.event, envelope.data as Record<string, unknown>];
      }),
    );
    t.same(
      [...byEvent.keys()].sort(),
      ['invoice.issued', 'payment.received', 'refund.paid'],
      'each once, each signature valid',
    );
    const check = (event: string, schema: TSchema, expected: unknown) => {
      const data = byEvent.get(event);
      t.ok(Value.Check(schema, data), `${event}: data is the documented component`);
      t.same(data, expected, `${event}: the resource as the admin interface showed it`);
    };
    check('invoice.issued', InvoiceSchema, issued);
    check('payment.received', PaymentSchema, payment);
    check('refund.paid', RefundSchema, final.payments[0]!.refunds[0]);
    t.match(byEvent.get('invoice.issued'), {
      currency: 'KWD',
      currency_exponent: 3,
      subtotal: 24_690,
      tax_amount: 1_235,
      total: 25_925,
    });
    t.equal(h.receiver.requests.length, 3, 'nothing for the internal refund.created');
  },
);
