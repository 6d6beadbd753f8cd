import t from 'tap';
import type { Invoice } from '../../src/domain/invoices/index.js';
import { projections } from '../../src/projections/index.js';
import { rebuildReadModels } from '../../src/projections/rebuild.js';
import { seedWorkspace } from '../support/app.js';
import { appFixture, STAFF } from '../applications/support.js';

const ISSUE = {
  currency: 'INR',
  line_items: [
    { description: 'Counselling package', quantity: 1, unit_amount: 2_500_000 },
    { description: 'Document review', quantity: 2, unit_amount: 250_000 },
  ],
  tax_rate_basis_points: 1800,
  due_date: '2026-11-30',
};

t.test('issue, pay in parts, refund and mark refunds paid through the admin interface', async (t) => {
  const f = await appFixture(t);
  const leadId = await f.lead();
  const issue = async (body: Record<string, unknown>, sandbox = false) => {
    const response = await f.admin('/invoices', { method: 'POST', json: body, sandbox });
    t.equal(response.status, 201, `issue: ${response.status === 201 ? '' : await response.clone().text()}`);
    return (await response.json()) as Invoice;
  };
  const invoice = await issue({ ...ISSUE, lead_id: leadId });
  t.match(invoice, {
    number: 'INV-1',
    lead_id: leadId,
    application_id: null,
    currency: 'INR',
    currency_exponent: 2,
    subtotal: 3_000_000,
    tax_amount: 540_000,
    total: 3_540_000,
    balance: 3_540_000,
    status: 'open',
    due_date: '2026-11-30',
    payments: [],
  });
  const application = await f.convert(await f.lead());
  const second = await issue({
    application_id: application.id,
    currency: 'JPY',
    line_items: [{ description: 'Fee', quantity: 1, unit_amount: 50_000 }],
    due_date: '2026-12-01',
  });
  t.match(second, { number: 'INV-2', currency_exponent: 0, total: 50_000, tax_amount: 0 });
  t.match(
    await issue({ ...ISSUE, lead_id: await f.lead(f.ws.test) }, true),
    { number: 'INV-1' },
    'sandbox numbers count on their own',
  );
  const liveLeadInSandbox = await f.admin('/invoices', {
    method: 'POST',
    json: { ...ISSUE, lead_id: leadId },
    sandbox: true,
  });
  t.equal(liveLeadInSandbox.status, 404, "a live lead is not the sandbox's");

  const pay = (body: Record<string, unknown>) =>
    f.admin(`/invoices/${invoice.id}/payments`, { method: 'POST', json: body });
  const partial = await pay({ amount: 1_000_000, currency: 'INR', method: 'bank_transfer', reference: 'NEFT-42' });
  t.equal(partial.status, 201);
  const afterPartial = (await partial.json()) as Invoice;
  t.match(afterPartial, { amount_paid: 1_000_000, balance: 2_540_000, status: 'partially_paid' });
  const payment = afterPartial.payments[0]!;
  t.match(payment, { amount: 1_000_000, currency: 'INR', method: 'bank_transfer', reference: 'NEFT-42', refunds: [] });

  const over = await pay({ amount: 2_540_001, currency: 'INR', method: 'card' });
  t.equal(over.status, 409);
  t.match(await over.json(), {
    error: 'overpayment',
    message: 'The payment of 25400.01 INR exceeds the balance of 25400.00 INR',
  });
  const otherCurrency = await pay({ amount: 100, currency: 'USD', method: 'card' });
  t.equal(otherCurrency.status, 400);
  t.match(await otherCurrency.json(), { error: 'currency_mismatch', fields: { currency: 'must be INR' } });
  t.equal((await pay({ amount: 10.5, currency: 'INR', method: 'card' })).status, 400, 'no fractions of a minor unit');
  t.equal((await pay({ amount: 0, currency: 'INR', method: 'card' })).status, 400);

  const rest = (await (await pay({ amount: 2_540_000, currency: 'INR', method: 'upi' })).json()) as Invoice;
  t.match(rest, { amount_paid: 3_540_000, balance: 0, status: 'paid' });

  const refund = (body: Record<string, unknown>, paymentId = payment.id) =>
    f.admin(`/invoices/${invoice.id}/payments/${paymentId}/refunds`, { method: 'POST', json: body });
  const created = await refund({ amount: 400_000, reason: 'Document review not needed' });
  t.equal(created.status, 201);
  const pending = ((await created.json()) as Invoice).payments[0]!.refunds[0]!;
  t.match(pending, { amount: 400_000, status: 'pending', paid_at: null, reason: 'Document review not needed' });
  const tooMuch = await refund({ amount: 600_001 });
  t.equal(tooMuch.status, 409);
  t.match(await tooMuch.json(), { error: 'refund_exceeds_payment' });
  t.equal((await refund({ amount: 1 }, '00000000-0000-4000-8000-000000000000')).status, 404);

  const paidOut = await f.admin(`/invoices/${invoice.id}/refunds/${pending.id}/paid`, { method: 'POST' });
  t.equal(paidOut.status, 200);
  t.match(await paidOut.json(), {
    amount_paid: 3_140_000,
    balance: 400_000,
    status: 'partially_paid',
    payments: [{ refunded_amount: 400_000, refunds: [{ status: 'paid' }] }],
  });
  t.equal((await f.admin(`/invoices/${invoice.id}/refunds/${pending.id}/paid`, { method: 'POST' })).status, 200);

  const events = await f.app.services.store.readStream(`invoice-${invoice.id}`);
  t.same(
    events.map((e) => e.type),
    ['invoice.issued', 'payment.received', 'payment.received', 'refund.created', 'refund.paid'],
    'marking a paid refund paid again appends nothing',
  );
  t.ok(events.every((e) => e.metadata.actor.type === 'user' && e.metadata.actor.email === STAFF));

  const read = (await (await f.admin(`/invoices/${invoice.id}`)).json()) as Invoice;
  t.equal(read.balance, 400_000);
  const list = (await (await f.admin(`/invoices?lead_id=${leadId}`)).json()) as { data: Invoice[] };
  t.same(
    list.data.map((i) => i.id),
    [invoice.id],
  );
  t.equal((await f.admin(`/invoices/${invoice.id}`, { sandbox: true })).status, 404, 'not in the sandbox');
  const other = await seedWorkspace(f.app, { slug: 'other-consultancy', name: 'Other' });
  t.equal(
    (await f.admin(`/invoices/${invoice.id}`, { workspace: other.workspace.slug, token: other.staffToken })).status,
    404,
    'not in another workspace',
  );

  // Refusals at issue.
  for (const bad of [
    { ...ISSUE, currency: 'XYZ', lead_id: leadId },
    { ...ISSUE, lead_id: leadId, application_id: application.id },
    { ...ISSUE, lead_id: leadId, due_date: '2026-13-01' },
    { ...ISSUE, lead_id: leadId, line_items: [] },
  ])
    t.equal((await f.admin('/invoices', { method: 'POST', json: bad })).status, 400, JSON.stringify(bad).slice(0, 80));

  const before = await f.app.pool.query('SELECT * FROM invoices ORDER BY id');
  await rebuildReadModels(f.app.pool, projections, f.app.services.personalData);
  t.same(
    (await f.app.pool.query('SELECT * FROM invoices ORDER BY id')).rows,
    before.rows,
    'rebuild gives the same rows',
  );
});

t.test('invoice numbers have no gaps under concurrent issues, refused ones included', async (t) => {
  const f = await appFixture(t);
  const leadId = await f.lead();
  const bodies = Array.from({ length: 24 }, (_, i) =>
    i % 4 === 3 ? { ...ISSUE, lead_id: leadId, currency: 'XYZ' } : { ...ISSUE, lead_id: leadId },
  );
  const answers = await Promise.all(bodies.map((json) => f.admin('/invoices', { method: 'POST', json })));
  t.same(answers.map((a) => a.status).filter((s) => s === 201).length, 18);
  const numbers = (await f.app.pool.query<{ number: string }>('SELECT number FROM invoices')).rows
    .map((r) => Number(r.number.slice(4)))
    .sort((a, b) => a - b);
  t.same(
    numbers,
    Array.from({ length: 18 }, (_, i) => i + 1),
    'INV-1 … INV-18, none skipped',
  );
});
