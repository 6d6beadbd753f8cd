import { refundable } from './evolve.js';
import { applyBasisPoints, currencyExponent, formatMinor, isCurrency, MAX_AMOUNT, multiply, sum } from './money.js';
import {
  InvoiceRefusal,
  PAYMENT_METHODS,
  type Invoice,
  type InvoiceCommand,
  type InvoiceEvent,
  type IssueInvoiceInput,
  type LineItem,
  type Payment,
  type Refund,
} from './types.js';

export const invoiceNumber = (n: number): string => `INV-${n}`;
export const MAX_LINE_ITEMS = 100;
export const MAX_QUANTITY = 10_000;
const TEXT_MAX = 200;

const invalid = (field: string, problem: string) =>
  new InvoiceRefusal('invalid', 'validation_failed', `${field}: ${problem}`, { [field]: problem });

function checkAmount(field: string, amount: number, min: number): number {
  if (!Number.isSafeInteger(amount) || amount < min || amount > MAX_AMOUNT)
    throw invalid(field, `an integer number of minor units from ${min} to ${MAX_AMOUNT}`);
  return amount;
}

function checkText(field: string, text: string | null): string | null {
  if (text === null) return null;
  const trimmed = text.trim();
  if (trimmed.length === 0 || trimmed.length > TEXT_MAX) throw invalid(field, `1 to ${TEXT_MAX} characters`);
  return trimmed;
}

function checkDate(field: string, date: string): string {
  const parsed = /^\d{4}-\d{2}-\d{2}$/.test(date) ? new Date(`${date}T00:00:00Z`) : null;
  if (!parsed || Number.isNaN(parsed.getTime()) || parsed.toISOString().slice(0, 10) !== date)
    throw invalid(field, 'a date (YYYY-MM-DD)');
  return date;
}

/** The bigint as a number once checked to be within MAX_AMOUNT. */
function withinMax(field: string, value: bigint): number {
  if (value > BigInt(MAX_AMOUNT)) throw invalid(field, `at most ${MAX_AMOUNT} minor units`);
  return Number(value);
}

/** The event that issues an invoice: line amounts, subtotal, tax (rounded half up) and total, all in minor units. */
export function decideIssue(input: IssueInvoiceInput): InvoiceEvent[] {
  if (!isCurrency(input.currency)) throw invalid('currency', 'an ISO 4217 currency code, for example INR or USD');
  if (input.line_items.length === 0 || input.line_items.length > MAX_LINE_ITEMS)
    throw invalid('line_items', `1 to ${MAX_LINE_ITEMS} items`);
  const items: LineItem[] = input.line_items.map((item, i) => {
    if (!Number.isSafeInteger(item.quantity) || item.quantity < 1 || item.quantity > MAX_QUANTITY)
      throw invalid(`line_items/${i}/quantity`, `an integer from 1 to ${MAX_QUANTITY}`);
    const unit = checkAmount(`line_items/${i}/unit_amount`, item.unit_amount, 0);
    return {
      description: checkText(`line_items/${i}/description`, item.description)!,
      quantity: item.quantity,
      unit_amount: unit,
      amount: withinMax(`line_items/${i}`, multiply(item.quantity, unit)),
    };
  });
  const rate = input.tax_rate_basis_points;
  if (!Number.isSafeInteger(rate) || rate < 0 || rate > 10_000)
    throw invalid('tax_rate_basis_points', 'an integer from 0 to 10000 (hundredths of a percent)');
  const subtotal = withinMax('line_items', sum(items.map((i) => i.amount)));
  const tax = withinMax('tax_rate_basis_points', applyBasisPoints(subtotal, rate));
  const total = withinMax('line_items', BigInt(subtotal) + BigInt(tax));
  if (total < 1) throw invalid('line_items', 'the total must be more than zero');
  const invoice: Invoice = {
    id: input.invoice_id,
    number: invoiceNumber(input.number),
    lead_id: input.subject.lead_id,
    application_id: input.subject.application_id,
    currency: input.currency,
    currency_exponent: currencyExponent(input.currency),
    line_items: items,
    subtotal,
    tax_rate_basis_points: rate,
    tax_amount: tax,
    total,
    amount_paid: 0,
    balance: total,
    status: 'open',
    due_date: checkDate('due_date', input.due_date),
    issued_at: input.now.toISOString(),
    payments: [],
  };
  return [{ type: 'invoice.issued', data: { invoice_id: invoice.id, payload: invoice, person_id: input.person_id } }];
}

function findPayment(invoice: Invoice, id: string): Payment {
  const payment = invoice.payments.find((p) => p.id === id);
  if (!payment) throw new InvoiceRefusal('not_found', 'not_found', 'No such payment on this invoice');
  return payment;
}

function findRefund(invoice: Invoice, id: string): Refund {
  const refund = invoice.payments.flatMap((p) => p.refunds).find((r) => r.id === id);
  if (!refund) throw new InvoiceRefusal('not_found', 'not_found', 'No such refund on this invoice');
  return refund;
}

/**
 * What an operation on an invoice appends. A payment is refused in another currency (400 `currency_mismatch`) and
 * above the balance (409 `overpayment`); a refund above what is left of its payment once every other refund of it,
 * pending or paid, is taken off (409 `refund_exceeds_payment`). Marking a paid refund paid again appends nothing.
 */
export function decide(invoice: Invoice, command: InvoiceCommand): InvoiceEvent[] {
  switch (command.type) {
    case 'record_payment':
      return decideRecordPayment(invoice, command);
    case 'create_refund':
      return decideCreateRefund(invoice, command);
    case 'mark_refund_paid':
      return decideMarkRefundPaid(invoice, command);
    default: {
      const unknown: never = command;
      throw new Error(`unknown invoice command ${JSON.stringify(unknown)}`);
    }
  }
}

type CommandOf<T extends InvoiceCommand['type']> = Extract<InvoiceCommand, { type: T }>;

function decideRecordPayment(invoice: Invoice, command: CommandOf<'record_payment'>): InvoiceEvent[] {
  if (command.currency !== invoice.currency)
    throw new InvoiceRefusal(
      'invalid',
      'currency_mismatch',
      `The invoice is in ${invoice.currency}; a payment in ${command.currency} cannot be recorded against it`,
      { currency: `must be ${invoice.currency}` },
    );
  const amount = checkAmount('amount', command.amount, 1);
  if (!(PAYMENT_METHODS as readonly string[]).includes(command.method))
    throw invalid('method', `one of ${PAYMENT_METHODS.join(', ')}`);
  if (amount > invoice.balance)
    throw new InvoiceRefusal(
      'conflict',
      'overpayment',
      `The payment of ${formatMinor(amount, invoice.currency)} exceeds the balance of ${formatMinor(invoice.balance, invoice.currency)}`,
    );
  const payment: Payment = {
    id: command.payment_id,
    invoice_id: invoice.id,
    amount,
    currency: invoice.currency,
    method: command.method,
    reference: checkText('reference', command.reference),
    received_at: command.now.toISOString(),
    refunded_amount: 0,
    refunds: [],
  };
  return [{ type: 'payment.received', data: { payment_id: payment.id, payload: payment } }];
}

function decideCreateRefund(invoice: Invoice, command: CommandOf<'create_refund'>): InvoiceEvent[] {
  const payment = findPayment(invoice, command.payment_id);
  const amount = checkAmount('amount', command.amount, 1);
  const left = refundable(payment);
  if (amount > left)
    throw new InvoiceRefusal(
      'conflict',
      'refund_exceeds_payment',
      `The refund of ${formatMinor(amount, invoice.currency)} exceeds the ${formatMinor(left, invoice.currency)} of the payment not yet refunded`,
    );
  const refund: Refund = {
    id: command.refund_id,
    payment_id: payment.id,
    invoice_id: invoice.id,
    amount,
    currency: invoice.currency,
    reason: checkText('reason', command.reason),
    status: 'pending',
    created_at: command.now.toISOString(),
    paid_at: null,
  };
  return [{ type: 'refund.created', data: { refund } }];
}

function decideMarkRefundPaid(invoice: Invoice, command: CommandOf<'mark_refund_paid'>): InvoiceEvent[] {
  const refund = findRefund(invoice, command.refund_id);
  if (refund.status === 'paid') return [];
  const paidAt = command.now.toISOString();
  const payload: Refund = { ...refund, status: 'paid', paid_at: paidAt };
  return [
    {
      type: 'refund.paid',
      data: { refund_id: refund.id, payment_id: refund.payment_id, paid_at: paidAt, payload },
    },
  ];
}
