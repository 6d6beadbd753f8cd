import fc from 'fast-check';
import t from 'tap';
import {
  applyBasisPoints,
  currencyExponent,
  decide,
  evolve,
  fold,
  formatMinor,
  decideIssue,
  InvoiceRefusal,
  refundable,
  MAX_AMOUNT,
  type Invoice,
  type InvoiceCommand,
  type InvoiceEvent,
} from '../../src/domain/invoices/index.js';
import { deciderSpec, onExisting } from '../support/decider-spec.js';
import { checkProperty } from '../support/properties.js';

const NOW = new Date('2026-11-01T10:00:00.000Z');
const LEAD = '00000000-0000-4000-8000-000000000001';
let counter = 0;
const id = () => `00000000-0000-4000-8000-${String(++counter).padStart(12, '0')}`;

function issued(overrides: Partial<Omit<Parameters<typeof decideIssue>[0], 'person_id'>> = {}): InvoiceEvent[] {
  return decideIssue({
    invoice_id: '00000000-0000-4000-8000-00000000aaaa',
    number: 7,
    subject: { lead_id: LEAD, application_id: null },
    person_id: LEAD,
    currency: 'INR',
    line_items: [
      { description: 'Counselling package', quantity: 1, unit_amount: 2_500_000 },
      { description: 'Document review', quantity: 3, unit_amount: 150_050 },
    ],
    tax_rate_basis_points: 1800,
    due_date: '2026-11-15',
    now: NOW,
    ...overrides,
  });
}

/** Given the events so far, when a command runs, then: the events it appends (test/support/decider-spec.ts). */
const spec = deciderSpec<Invoice | undefined, InvoiceCommand, InvoiceEvent>({
  decide: onExisting(decide),
  evolve,
  initialState: () => undefined,
});
const given = spec.after;
const pay = (amount: number, currency = 'INR'): InvoiceCommand => ({
  type: 'record_payment',
  payment_id: id(),
  amount,
  currency,
  method: 'upi',
  reference: 'UTR123',
  now: NOW,
});

t.test('currency exponents come from ISO 4217 data (Intl), not a table of ours', async (t) => {
  t.equal(currencyExponent('INR'), 2);
  t.equal(currencyExponent('JPY'), 0);
  t.equal(currencyExponent('KWD'), 3);
  t.throws(() => currencyExponent('XYZ'));
  t.equal(formatMinor(123456, 'USD'), '1234.56 USD');
  t.equal(formatMinor(5, 'KWD'), '0.005 KWD');
  t.equal(formatMinor(500, 'JPY'), '500 JPY');
  t.equal(applyBasisPoints(MAX_AMOUNT, 9999), 999_900_000_000n, 'exact beyond 2^53 intermediate products');
  t.equal(applyBasisPoints(1, 5000), 1n, 'half rounds up');
  t.equal(applyBasisPoints(1, 4999), 0n);
});

t.test('issuing: line amounts, subtotal, tax rounded half up, total, number, exponent', async (t) => {
  const invoice = fold(issued())!;
  t.match(invoice, {
    number: 'INV-7',
    currency: 'INR',
    currency_exponent: 2,
    subtotal: 2_950_150,
    tax_amount: 531_027, // 2,950,150 × 18% = 531,027
    total: 3_481_177,
    amount_paid: 0,
    balance: 3_481_177,
    status: 'open',
    payments: [],
  });
  t.same(invoice.line_items[1], { description: 'Document review', quantity: 3, unit_amount: 150_050, amount: 450_150 });
  t.equal(
    fold(issued({ currency: 'JPY', line_items: [{ description: 'Fee', quantity: 1, unit_amount: 5000 }] }))!
      .currency_exponent,
    0,
  );
  for (const bad of [
    { currency: 'XYZ' },
    { currency: 'inr' },
    { line_items: [] },
    { line_items: [{ description: 'x', quantity: 0, unit_amount: 1 }] },
    { line_items: [{ description: 'x', quantity: 1, unit_amount: 1.5 }] },
    { line_items: [{ description: 'x', quantity: 10_000, unit_amount: MAX_AMOUNT }] },
    { line_items: [{ description: 'free', quantity: 1, unit_amount: 0 }] },
    { tax_rate_basis_points: 10_001 },
    { due_date: '2026-02-30' },
  ])
    t.throws(() => issued(bad), InvoiceRefusal, JSON.stringify(bad));
});

t.test('payments: partial, then paid; overpayment and another currency refused', async (t) => {
  const g = given(issued());
  const first = g.when(pay(1_000_000));
  const after = g.after(first);
  t.match(after, { amount_paid: 1_000_000, balance: 2_481_177, status: 'partially_paid' });
  t.match(first[0], {
    type: 'payment.received',
    data: { payload: { amount: 1_000_000, currency: 'INR', method: 'upi', refunds: [] } },
  });
  const g2 = given([...issued(), ...first]);
  t.throws(() => g2.when(pay(2_481_178)), {
    code: 'overpayment',
    kind: 'conflict',
    message: /exceeds the balance of 24811\.77 INR/,
  });
  t.throws(() => g2.when(pay(100, 'USD')), { code: 'currency_mismatch', kind: 'invalid' });
  const paid = g2.after(g2.when(pay(2_481_177)));
  t.match(paid, { amount_paid: 3_481_177, balance: 0, status: 'paid' });
  spec(t)
    .given([...issued(), ...first, ...g2.when(pay(2_481_177))])
    .when(pay(1))
    .thenThrows({ code: 'overpayment' });
});

t.test('refunds: pending until paid, never above the payment, refund.paid once', async (t) => {
  const payment = given(issued()).when(pay(1_000_000));
  const paymentId = (payment[0]!.data as { payment_id: string }).payment_id;
  const events = [...issued(), ...payment];
  const refund = given(events).when({
    type: 'create_refund',
    refund_id: id(),
    payment_id: paymentId,
    amount: 600_000,
    reason: 'Visa refused',
    now: NOW,
  });
  const withRefund = [...events, ...refund];
  t.match(fold(withRefund), {
    amount_paid: 1_000_000,
    payments: [{ refunds: [{ status: 'pending', amount: 600_000 }] }],
  });
  t.throws(
    () =>
      given(withRefund).when({
        type: 'create_refund',
        refund_id: id(),
        payment_id: paymentId,
        amount: 400_001,
        reason: null,
        now: NOW,
      }),
    { code: 'refund_exceeds_payment', kind: 'conflict' },
    'a pending refund counts against what is left',
  );
  const refundId = (refund[0]!.data as { refund: { id: string } }).refund.id;
  const paidOut = given(withRefund).when({ type: 'mark_refund_paid', refund_id: refundId, now: NOW });
  t.match(paidOut, [
    { type: 'refund.paid', data: { payload: { id: refundId, status: 'paid', paid_at: NOW.toISOString() } } },
  ]);
  const after = fold([...withRefund, ...paidOut])!;
  t.match(after, {
    amount_paid: 400_000,
    balance: 3_081_177,
    status: 'partially_paid',
    payments: [{ refunded_amount: 600_000 }],
  });
  t.same(
    given([...withRefund, ...paidOut]).when({ type: 'mark_refund_paid', refund_id: refundId, now: NOW }),
    [],
    'paid once',
  );
  t.throws(
    () =>
      given(events).when({
        type: 'create_refund',
        refund_id: id(),
        payment_id: id(),
        amount: 1,
        reason: null,
        now: NOW,
      }),
    { kind: 'not_found', message: 'No such payment on this invoice' },
  );
});

/** Random operations on an invoice: payments (some too large, some in another currency), refunds, refunds paid. */
const opArb = fc.oneof(
  fc.record({ kind: fc.constant('pay' as const), amount: fc.integer({ min: 1, max: 4_000_000 }), usd: fc.boolean() }),
  fc.record({ kind: fc.constant('refund' as const), amount: fc.integer({ min: 1, max: 2_000_000 }), pick: fc.nat() }),
  fc.record({ kind: fc.constant('paid' as const), pick: fc.nat() }),
);

function invariants(invoice: Invoice): boolean {
  const received = invoice.payments.reduce((a, p) => a + p.amount, 0);
  return (
    invoice.balance >= 0 &&
    invoice.balance <= invoice.total &&
    invoice.amount_paid + invoice.balance === invoice.total &&
    received - invoice.payments.reduce((a, p) => a + p.refunded_amount, 0) === invoice.amount_paid &&
    invoice.payments.every(
      (p) => refundable(p) >= 0 && p.refunded_amount <= p.amount && Number.isSafeInteger(p.refunded_amount),
    ) &&
    (invoice.status === 'paid') === (invoice.balance === 0) &&
    [invoice.total, invoice.subtotal, invoice.tax_amount, invoice.amount_paid].every(Number.isSafeInteger)
  );
}

t.test('properties: balances never negative, refunds never above what was paid, totals exact', async (t) => {
  await checkProperty(
    t,
    'money invariants under any sequence of operations',
    fc.property(fc.array(opArb, { maxLength: 30 }), (ops) => {
      let events = issued();
      let invoice = fold(events)!;
      for (const op of ops) {
        let command: InvoiceCommand;
        if (op.kind === 'pay') command = pay(op.amount, op.usd ? 'USD' : 'INR');
        else if (op.kind === 'refund') {
          const payment = invoice.payments[op.pick % Math.max(1, invoice.payments.length)];
          if (!payment) continue;
          command = {
            type: 'create_refund',
            refund_id: id(),
            payment_id: payment.id,
            amount: op.amount,
            reason: null,
            now: NOW,
          };
        } else {
          const refunds = invoice.payments.flatMap((p) => p.refunds);
          const refund = refunds[op.pick % Math.max(1, refunds.length)];
          if (!refund) continue;
          command = { type: 'mark_refund_paid', refund_id: refund.id, now: NOW };
        }
        let appended: InvoiceEvent[] = [];
        try {
          appended = decide(invoice, command);
        } catch (error) {
          if (!(error instanceof InvoiceRefusal)) throw error;
          // A refusal must be one of the money rules, never a silent change.
          if (!['overpayment', 'currency_mismatch', 'refund_exceeds_payment'].includes(error.code)) return false;
        }
        for (const e of appended) invoice = evolve(invoice, e);
        events = [...events, ...appended];
        if (!invariants(invoice)) return false;
      }
      return JSON.stringify(fold(events)) === JSON.stringify(invoice);
    }),
    300,
  );
  await checkProperty(
    t,
    'tax is subtotal × rate rounded half up, exactly',
    fc.property(
      fc.array(fc.record({ q: fc.integer({ min: 1, max: 100 }), u: fc.integer({ min: 0, max: 10_000_000 }) }), {
        minLength: 1,
        maxLength: 5,
      }),
      fc.integer({ min: 0, max: 10_000 }),
      (items, rate) => {
        const subtotal = items.reduce((a, i) => a + BigInt(i.q) * BigInt(i.u), 0n);
        if (subtotal === 0n) return true;
        const invoice = fold(
          issued({
            line_items: items.map((i) => ({ description: 'item', quantity: i.q, unit_amount: i.u })),
            tax_rate_basis_points: rate,
          }),
        )!;
        const exact = subtotal * BigInt(rate); // tax × 10000, exactly
        const tax = BigInt(invoice.tax_amount);
        return (
          BigInt(invoice.subtotal) === subtotal &&
          tax * 10000n - exact <= 5000n &&
          exact - tax * 10000n < 5000n &&
          BigInt(invoice.total) === subtotal + tax
        );
      },
    ),
    300,
  );
});
