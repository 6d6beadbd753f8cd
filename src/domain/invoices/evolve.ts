import type { Invoice, InvoiceEvent, Payment } from './types.js';

/** Paid, balance and status follow from the payments and the refunds paid out of them. */
export function settle(invoice: Invoice): Invoice {
  const received = invoice.payments.reduce((a, p) => a + p.amount, 0);
  const refunded = invoice.payments.reduce((a, p) => a + p.refunded_amount, 0);
  const amountPaid = received - refunded;
  const balance = invoice.total - amountPaid;
  return {
    ...invoice,
    amount_paid: amountPaid,
    balance,
    status: amountPaid === 0 ? 'open' : balance === 0 ? 'paid' : 'partially_paid',
  };
}

function updatePayment(invoice: Invoice, paymentId: string, change: (p: Payment) => Payment): Invoice {
  return { ...invoice, payments: invoice.payments.map((p) => (p.id === paymentId ? change(p) : p)) };
}

/** Folds one event into the invoice. */
export function evolve(state: Invoice | undefined, event: InvoiceEvent): Invoice {
  if (event.type === 'invoice.issued') return event.data.payload;
  if (!state) throw new Error(`${event.type} before invoice.issued`);
  switch (event.type) {
    case 'payment.received':
      return settle({ ...state, payments: [...state.payments, event.data.payload] });
    case 'refund.created': {
      const refund = event.data.refund;
      return updatePayment(state, refund.payment_id, (p) => ({ ...p, refunds: [...p.refunds, refund] }));
    }
    case 'refund.paid': {
      const { refund_id, payment_id, payload } = event.data;
      return settle(
        updatePayment(state, payment_id, (p) => ({
          ...p,
          refunded_amount: p.refunded_amount + payload.amount,
          refunds: p.refunds.map((r) => (r.id === refund_id ? payload : r)),
        })),
      );
    }
    default: {
      const unknown: never = event;
      throw new Error(`unknown invoice event ${JSON.stringify(unknown)}`);
    }
  }
}

export function fold(events: readonly InvoiceEvent[]): Invoice | undefined {
  return events.reduce<Invoice | undefined>((state, event) => evolve(state, event), undefined);
}

/** What can still be refunded of a payment: its amount less every refund of it, pending or paid. */
export const refundable = (payment: Payment): number =>
  payment.amount - payment.refunds.reduce((a, r) => a + r.amount, 0);
