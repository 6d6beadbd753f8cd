import { eventReader, eventTypes } from '../event-types.js';
import { Refusal } from '../refusal.js';

/** The invoice aggregate: an invoice with the payments recorded against it and the refunds of those payments. */

export const PAYMENT_METHODS = ['bank_transfer', 'card', 'cash', 'upi', 'cheque', 'other'] as const;
export type PaymentMethod = (typeof PAYMENT_METHODS)[number];
export const INVOICE_STATUSES = ['open', 'partially_paid', 'paid'] as const;
export type InvoiceStatus = (typeof INVOICE_STATUSES)[number];
export const REFUND_STATUSES = ['pending', 'paid'] as const;
export type RefundStatus = (typeof REFUND_STATUSES)[number];

export interface LineItem {
  description: string;
  quantity: number;
  /** Minor units. */
  unit_amount: number;
  /** quantity × unit_amount, minor units. */
  amount: number;
}

export interface Refund {
  id: string;
  payment_id: string;
  invoice_id: string;
  amount: number;
  currency: string;
  reason: string | null;
  status: RefundStatus;
  created_at: string;
  paid_at: string | null;
}

export interface Payment {
  id: string;
  invoice_id: string;
  amount: number;
  currency: string;
  method: PaymentMethod;
  reference: string | null;
  received_at: string;
  /** Refunds paid out of this payment, minor units. */
  refunded_amount: number;
  refunds: Refund[];
}

/** The public Invoice (and the state of the aggregate: nothing is kept that the public shape does not show). */
export interface Invoice {
  id: string;
  number: string;
  lead_id: string | null;
  application_id: string | null;
  currency: string;
  /** The currency's ISO 4217 exponent: amounts are integers in units of 10^-exponent. */
  currency_exponent: number;
  line_items: LineItem[];
  subtotal: number;
  tax_rate_basis_points: number;
  tax_amount: number;
  total: number;
  /** Payments received less refunds paid. */
  amount_paid: number;
  balance: number;
  status: InvoiceStatus;
  due_date: string;
  issued_at: string;
  payments: Payment[];
}

export type InvoiceSubject = { lead_id: string; application_id: null } | { lead_id: null; application_id: string };

export interface InvoiceIssued {
  type: 'invoice.issued';
  data: {
    invoice_id: string;
    payload: Invoice;
    /**
     * The lead whose person this belongs to (an application's lead for an application's): the stream's data key is
     * filed under them, so erasing the person erases its personal values too. Absent in events written before erasure
     * existed.
     */
    person_id?: string;
  };
}
export interface PaymentReceived {
  type: 'payment.received';
  data: { payment_id: string; payload: Payment };
}
/** Internal: a refund is created pending; refund.paid announces it once paid out. */
export interface RefundCreated {
  type: 'refund.created';
  data: { refund: Refund };
}
export interface RefundPaid {
  type: 'refund.paid';
  data: { refund_id: string; payment_id: string; paid_at: string; payload: Refund };
}

export type InvoiceEvent = InvoiceIssued | PaymentReceived | RefundCreated | RefundPaid;

/** Every type of InvoiceEvent, once: the compiler names a type missing here (src/domain/event-types.ts). */
export const INVOICE_EVENT_TYPES = eventTypes<InvoiceEvent>({
  'invoice.issued': 'invoice.issued',
  'payment.received': 'payment.received',
  'refund.created': 'refund.created',
  'refund.paid': 'refund.paid',
});

/** A stored event of an invoice stream as the domain's event type. */
export const toInvoiceEvent = eventReader<InvoiceEvent>(INVOICE_EVENT_TYPES, 'an invoice');

export interface IssueInvoiceInput {
  invoice_id: string;
  number: number;
  subject: InvoiceSubject;
  currency: string;
  line_items: { description: string; quantity: number; unit_amount: number }[];
  tax_rate_basis_points: number;
  due_date: string;
  now: Date;
  /** The lead of the invoice's person (see InvoiceIssued). */
  person_id: string;
}

export type InvoiceCommand =
  | {
      type: 'record_payment';
      payment_id: string;
      amount: number;
      currency: string;
      method: PaymentMethod;
      reference: string | null;
      now: Date;
    }
  | { type: 'create_refund'; refund_id: string; payment_id: string; amount: number; reason: string | null; now: Date }
  | { type: 'mark_refund_paid'; refund_id: string; now: Date };

/** An operation the invoice refuses: the status and code the caller sees. */
export class InvoiceRefusal extends Refusal {}
