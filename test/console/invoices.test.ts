import t from 'tap';
import { formatMoney, parseMoney } from '../../src/console/money.js';
import { memberOf } from '../identity/support.js';
import { consoleFixture } from './support.js';

t.test('amounts: integer minor units in the currency’s format, and typed amounts parsed exactly', async (t) => {
  t.equal(formatMoney(1_500_050, 'INR'), '₹15,000.50');
  t.equal(formatMoney(500, 'JPY'), 'JP¥500');
  t.equal(formatMoney(1_234_567, 'KWD').replace(/\s/g, ' '), 'KWD 1,234.567');
  t.equal(formatMoney(999_999_999_999, 'USD'), '$9,99,99,99,999.99', 'exact beyond a double’s cents');
  t.equal(parseMoney('15,000.50', 'INR'), 1_500_050);
  t.equal(parseMoney('0.1', 'USD'), 10);
  t.equal(parseMoney('1.5', 'JPY'), 'JPY has no fractions.');
  t.equal(parseMoney('1.234', 'INR'), 'INR has 2 digits after the point.');
  t.equal(parseMoney('0', 'INR'), 'Enter an amount above zero.');
  t.equal(parseMoney('12', 'XYZ'), 'Choose a currency.');
});

t.test('invoices: issue, pay part, refund, mark the refund paid; refusals next to their fields', async (t) => {
  const f = await consoleFixture(t);
  const created = await f.app.request('/v1/leads', {
    method: 'POST',
    key: f.ws.live,
    json: { full_name: 'Imran Ali', phone: '+919811177788', consent: true },
  });
  const leadId = ((await created.json()) as { id: string }).id;
  // A manager issues here; a counsellor's reading and refusals are checked at the end.
  const staff = f.client();
  await staff.signIn(memberOf('manager'));
  const base = `/console/w/${f.ws.workspace.slug}/invoices`;
  const form = {
    lead_id: leadId,
    currency: 'INR',
    description: 'Counselling package',
    quantity: '2',
    unit_amount: '7,500.25',
    tax_percent: '18',
    due_date: '2026-12-15',
  };
  const badAmount = await staff.post(base, { ...form, unit_amount: '7500.255' });
  t.equal(badAmount.status, 400);
  t.match(badAmount.text, /id="f-unit_amount-error">INR has 2 digits after the point/);
  const issued = await staff.post(base, form);
  t.equal(issued.status, 303);
  const path = new URL(issued.headers.get('location')!, f.app.baseUrl).pathname;
  const invoice = await staff.get(path);
  t.match(invoice.text, /<dd id="total">₹17,700.59<\/dd>/, '2 × 7,500.25 plus 18%, rounded half up');
  const over = await staff.post(`${path}/payments`, { amount: '20000', method: 'upi' });
  t.equal(over.status, 409);
  t.match(over.text, /id="f-amount-error">/, 'an overpayment refused next to the amount');
  t.equal((await staff.post(`${path}/payments`, { amount: '10,000', method: 'upi', reference: 'UPI-1' })).status, 303);
  const paid = await staff.get(path);
  t.match(paid.text, /<dd id="balance">₹7,700.59<\/dd>/);
  t.match(paid.text, 'partially paid');

  const manager = f.client();
  await manager.signIn(memberOf('manager'));
  const managerView = await manager.get(path);
  const pid = /payments\/([0-9a-f-]{36})\/refunds/.exec(managerView.text)![1]!;
  const tooMuch = await manager.post(`${path}/payments/${pid}/refunds`, { amount: '10,000.01', confirm: 'yes' });
  t.ok(tooMuch.status === 409 || tooMuch.status === 400, `refund beyond the payment: ${tooMuch.status}`);
  t.match(tooMuch.text, new RegExp(`id="refund-${pid}-error"`), 'next to the refund amount');
  t.equal(
    (await manager.post(`${path}/payments/${pid}/refunds`, { amount: '2,500', reason: 'Fee waived', confirm: 'yes' }))
      .status,
    303,
  );
  const refunded = await manager.get(path);
  t.match(refunded.text, /Refund of ₹2,500.00 \(Fee waived\): pending/);
  const refundId = /refunds\/([0-9a-f-]{36})\/paid/.exec(refunded.text)![1]!;
  t.equal((await manager.post(`${path}/refunds/${refundId}/paid`, { confirm: 'yes' })).status, 303);
  const done = await manager.get(`${path}?done=refund_paid`);
  t.match(done.text, 'The refund was marked paid.');
  t.match(done.text, /<dd id="paid">₹7,500.00<\/dd>/, 'payments less refunds paid');
  t.match((await manager.get(`${base}?lead=${leadId}`)).text, /₹17,700.59/);
  const realCounsellor = f.client();
  await realCounsellor.signIn(memberOf('counsellor'));
  t.equal((await realCounsellor.get(path)).status, 200, 'a counsellor, who may issue, reads invoices (the table)');
  const refusedRefund = await realCounsellor.post(`${path}/payments/${pid}/refunds`, { amount: '1' });
  t.equal(refusedRefund.status, 403, 'nor refund');
});
