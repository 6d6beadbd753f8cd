import type { FastifyRequest } from 'fastify';
import { issueInvoice, handleInvoiceCommand } from '../../commands/invoices/invoice-commands.js';
import { subjectOf } from '../../commands/subject.js';
import type { InvoiceCommand } from '../../domain/invoices/index.js';
import { findInvoice, listInvoices } from '../../projections/invoices.js';
import { newId } from '../../shared/ids.js';
import { staffScope } from '../admin-auth.js';
import { notFound } from '../errors.js';
import { ModeQuery } from '../../schemas/application.js';
import { adminErrorResponses, AdminWorkspaceParams } from '../schemas/admin.js';
import { answer } from '../schemas/error.js';
import {
  Invoice,
  InvoiceList,
  InvoiceListQuery,
  InvoiceParams,
  IssueInvoiceBody,
  PaymentBody,
  PaymentParams,
  RefundBody,
  RefundParams,
} from '../schemas/invoice.js';
import type { AppServices } from '../../bootstrap.js';
import type { TypedApp } from '../typed-app.js';

/** Under the admin interface's prefix (/admin/v1, src/http/routes/admin.ts). */
const BASE = '/workspaces/:workspace/invoices';
const ERRORS = adminErrorResponses(400, 401, 403, 404, 409);
const TAGS = ['invoices'];

/**
 * The workspace UI's billing operations, for staff: issue invoices, record payments against them, refund payments
 * and mark refunds paid. Every answer is the Invoice as it is afterwards. Live data unless `?sandbox=true`.
 */
export function registerAdminInvoiceRoutes(app: TypedApp, services: AppServices): void {
  registerIssueInvoice(app, services);
  registerListInvoices(app, services);
  registerGetInvoice(app, services);
  registerRecordPayment(app, services);
  registerCreateRefund(app, services);
  registerMarkRefundPaid(app, services);
}

function staff(services: AppServices, request: FastifyRequest, sandbox: boolean | undefined) {
  return staffScope(request, sandbox, services.now());
}

/** Applies one operation to the invoice and answers the invoice as it is after. */
async function operate(
  services: AppServices,
  request: FastifyRequest,
  sandbox: boolean | undefined,
  id: string,
  command: (now: Date) => InvoiceCommand,
) {
  const { context } = staff(services, request, sandbox);
  return (await handleInvoiceCommand(services.store, context, id, command)).state;
}

/** POST …/invoices */
function registerIssueInvoice(app: TypedApp, services: AppServices): void {
  app.post(
    BASE,
    {
      schema: {
        tags: TAGS,
        operationId: 'issueInvoice',
        summary: 'Issue an invoice for a lead or an application (INV-<n>, amounts in minor units): invoice.issued',
        params: AdminWorkspaceParams,
        querystring: ModeQuery,
        body: IssueInvoiceBody,
        response: { 201: answer(Invoice, 'The invoice issued'), ...ERRORS },
      },
    },
    async (request, reply) => {
      const { context } = staff(services, request, request.query.sandbox);
      const { lead_id, application_id, currency, line_items, tax_rate_basis_points, due_date } = request.body;
      const invoice = await issueInvoice(services.store, context, {
        subject: subjectOf({ lead_id, application_id }),
        currency,
        line_items,
        tax_rate_basis_points: tax_rate_basis_points ?? 0,
        due_date,
      });
      return reply.status(201).send(invoice);
    },
  );
}

/** GET …/invoices */
function registerListInvoices(app: TypedApp, services: AppServices): void {
  app.get(
    BASE,
    {
      schema: {
        tags: TAGS,
        operationId: 'listInvoices',
        summary: 'List the invoices of a lead or an application (or all), newest first',
        params: AdminWorkspaceParams,
        querystring: InvoiceListQuery,
        response: { 200: answer(InvoiceList, 'The invoices'), ...ERRORS },
      },
    },
    async (request) => {
      const { workspace, sandbox } = staff(services, request, request.query.sandbox);
      const { lead_id, application_id } = request.query;
      return { data: await listInvoices(services.pool, workspace.id, sandbox, { lead_id, application_id }) };
    },
  );
}

/** GET …/invoices/{id} */
function registerGetInvoice(app: TypedApp, services: AppServices): void {
  app.get(
    `${BASE}/:id`,
    {
      schema: {
        tags: TAGS,
        operationId: 'getInvoice',
        summary: 'Read an invoice with its payments and refunds',
        params: InvoiceParams,
        querystring: ModeQuery,
        response: { 200: answer(Invoice, 'The invoice'), ...ERRORS },
      },
    },
    async (request) => {
      const { workspace, sandbox } = staff(services, request, request.query.sandbox);
      const invoice = await findInvoice(services.pool, workspace.id, sandbox, request.params.id);
      if (!invoice) throw notFound('invoice');
      return invoice;
    },
  );
}

/** POST …/invoices/{id}/payments */
function registerRecordPayment(app: TypedApp, services: AppServices): void {
  app.post(
    `${BASE}/:id/payments`,
    {
      schema: {
        tags: TAGS,
        operationId: 'recordPayment',
        summary:
          'Record a payment (partial payments allowed; over the balance: 409 overpayment; another currency: 400 currency_mismatch): payment.received',
        params: InvoiceParams,
        querystring: ModeQuery,
        body: PaymentBody,
        response: { 201: answer(Invoice, 'The invoice with the payment'), ...ERRORS },
      },
    },
    async (request, reply) => {
      const { amount, currency, method, reference } = request.body;
      const invoice = await operate(services, request, request.query.sandbox, request.params.id, (now) => ({
        type: 'record_payment',
        payment_id: newId(now.getTime()),
        amount,
        currency,
        method,
        reference: reference ?? null,
        now,
      }));
      return reply.status(201).send(invoice);
    },
  );
}

/** POST …/invoices/{id}/payments/{paymentId}/refunds */
function registerCreateRefund(app: TypedApp, services: AppServices): void {
  app.post(
    `${BASE}/:id/payments/:paymentId/refunds`,
    {
      schema: {
        tags: TAGS,
        operationId: 'createRefund',
        summary:
          'Create a refund of a payment, pending until paid (never more than the payment less its other refunds)',
        params: PaymentParams,
        querystring: ModeQuery,
        body: RefundBody,
        response: { 201: answer(Invoice, 'The invoice with the refund'), ...ERRORS },
      },
    },
    async (request, reply) => {
      const invoice = await operate(services, request, request.query.sandbox, request.params.id, (now) => ({
        type: 'create_refund',
        refund_id: newId(now.getTime()),
        payment_id: request.params.paymentId,
        amount: request.body.amount,
        reason: request.body.reason ?? null,
        now,
      }));
      return reply.status(201).send(invoice);
    },
  );
}

/** POST …/invoices/{id}/refunds/{refundId}/paid */
function registerMarkRefundPaid(app: TypedApp, services: AppServices): void {
  app.post(
    `${BASE}/:id/refunds/:refundId/paid`,
    {
      schema: {
        tags: TAGS,
        operationId: 'markRefundPaid',
        summary: 'Mark a refund paid out: refund.paid (the balance grows by its amount)',
        params: RefundParams,
        querystring: ModeQuery,
        response: { 200: answer(Invoice, 'The invoice with the refund paid'), ...ERRORS },
      },
    },
    async (request) =>
      operate(services, request, request.query.sandbox, request.params.id, (now) => ({
        type: 'mark_refund_paid',
        refund_id: request.params.refundId,
        now,
      })),
  );
}
