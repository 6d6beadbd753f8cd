import { Type, type Static } from 'typebox';
import {
  INVOICE_STATUSES,
  MAX_AMOUNT,
  MAX_LINE_ITEMS,
  MAX_QUANTITY,
  PAYMENT_METHODS,
  REFUND_STATUSES,
} from '../../domain/invoices/index.js';
import { StringEnum } from '../../shared/enums.js';
import { WorkspaceRef } from '../../schemas/workspace-ref.js';
import { EXACTLY_ONE_SUBJECT } from './subject.js';

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) => Type.Union([schema, Type.Null()]);
const Uuid = Type.String({ format: 'uuid' });
const DateTime = Type.String({ format: 'date-time' });
const Currency = Type.String({ pattern: '^[A-Z]{3}$', description: 'ISO 4217 code, for example INR' });
const Minor = (description: string, minimum = 0) =>
  Type.Integer({ minimum, maximum: MAX_AMOUNT, description: `${description}, in minor units of the currency` });
const Text = Type.String({ minLength: 1, maxLength: 200 });

export const Refund = Type.Object(
  {
    id: Uuid,
    payment_id: Uuid,
    invoice_id: Uuid,
    amount: Minor('the amount refunded', 1),
    currency: Currency,
    reason: Nullable(Type.String()),
    status: StringEnum(REFUND_STATUSES),
    created_at: DateTime,
    paid_at: Nullable(DateTime),
  },
  { additionalProperties: false, description: 'A refund of a payment; refund.paid is sent when it is marked paid' },
);

export const Payment = Type.Object(
  {
    id: Uuid,
    invoice_id: Uuid,
    amount: Minor('the amount received', 1),
    currency: Currency,
    method: StringEnum(PAYMENT_METHODS),
    reference: Nullable(Type.String()),
    received_at: DateTime,
    refunded_amount: Minor('refunds paid out of this payment'),
    refunds: Type.Array(Refund),
  },
  { additionalProperties: false, description: 'A payment recorded against an invoice' },
);

export const LineItem = Type.Object(
  {
    description: Type.String(),
    quantity: Type.Integer({ minimum: 1, maximum: MAX_QUANTITY }),
    unit_amount: Minor('the price of one'),
    amount: Minor('quantity × unit_amount'),
  },
  { additionalProperties: false },
);

export const Invoice = Type.Object(
  {
    id: Uuid,
    number: Type.String({ description: 'INV-<n>, counted per workspace and mode without gaps' }),
    lead_id: Nullable(Uuid),
    application_id: Nullable(Uuid),
    currency: Currency,
    currency_exponent: Type.Integer({
      minimum: 0,
      maximum: 4,
      description: "the currency's ISO 4217 exponent: an amount of 12345 with exponent 2 is 123.45",
    }),
    line_items: Type.Array(LineItem),
    subtotal: Minor('the sum of the line amounts'),
    tax_rate_basis_points: Type.Integer({ minimum: 0, maximum: 10_000, description: '1800 is 18%' }),
    tax_amount: Minor('subtotal × rate, rounded half up'),
    total: Minor('subtotal + tax', 1),
    amount_paid: Minor('payments received less refunds paid'),
    balance: Minor('total − amount_paid; never negative'),
    status: StringEnum(INVOICE_STATUSES),
    due_date: Type.String({ format: 'date' }),
    issued_at: DateTime,
    payments: Type.Array(Payment),
  },
  {
    additionalProperties: false,
    description: 'An invoice for a lead or an application (exactly one of lead_id and application_id is set)',
  },
);
export type InvoiceView = Static<typeof Invoice>;

export const IssueInvoiceBody = Type.Object(
  {
    lead_id: Type.Optional(Uuid),
    application_id: Type.Optional(Uuid),
    currency: Currency,
    line_items: Type.Array(
      Type.Object(
        {
          description: Text,
          quantity: Type.Integer({ minimum: 1, maximum: MAX_QUANTITY }),
          unit_amount: Minor('the price of one'),
        },
        { additionalProperties: false },
      ),
      { minItems: 1, maxItems: MAX_LINE_ITEMS },
    ),
    tax_rate_basis_points: Type.Optional(Type.Integer({ minimum: 0, maximum: 10_000, default: 0 })),
    due_date: Type.String({ format: 'date' }),
  },
  { additionalProperties: false, ...EXACTLY_ONE_SUBJECT },
);

export const PaymentBody = Type.Object(
  {
    amount: Minor('the amount received', 1),
    currency: Currency,
    method: StringEnum(PAYMENT_METHODS),
    reference: Type.Optional(Text),
  },
  { additionalProperties: false },
);

export const RefundBody = Type.Object(
  { amount: Minor('the amount to refund', 1), reason: Type.Optional(Text) },
  { additionalProperties: false },
);

export const InvoiceParams = Type.Object({ workspace: WorkspaceRef, id: Uuid }, { additionalProperties: false });
export const PaymentParams = Type.Object(
  { workspace: WorkspaceRef, id: Uuid, paymentId: Uuid },
  { additionalProperties: false },
);
export const RefundParams = Type.Object(
  { workspace: WorkspaceRef, id: Uuid, refundId: Uuid },
  { additionalProperties: false },
);
export const InvoiceListQuery = Type.Object(
  {
    lead_id: Type.Optional(Uuid),
    application_id: Type.Optional(Uuid),
    sandbox: Type.Optional(Type.Boolean({ description: 'sandbox (test-mode) data; live by default' })),
  },
  { additionalProperties: false },
);
export const InvoiceList = Type.Object(
  { data: Type.Array(Invoice) },
  { additionalProperties: false, description: 'Newest first, at most 500' },
);
