import type { FastifyReply } from 'fastify';
import { Type, type Static } from 'typebox';
import type { AppServices } from '../../bootstrap.js';
import { isCommandError } from '../../commands/errors.js';
import { issueInvoice, handleInvoiceCommand } from '../../commands/invoices/invoice-commands.js';
import { subjectOf } from '../../commands/subject.js';
import { INVOICE_STATUSES, PAYMENT_METHODS, type InvoiceCommand } from '../../domain/invoices/types.js';
import type { InvoiceView } from '../../http/schemas/invoice.js';
import type { TypedApp } from '../../http/typed-app.js';
import { can } from '../../identity/permissions.js';
import { findInvoice } from '../../projections/invoices.js';
import { newId } from '../../shared/ids.js';
import { ConsoleRefusal, sendPage, type MemberView } from '../context.js';
import { html, type Html, table } from '../html.js';
import { choice, csrfField, field, filters, notice, page } from '../layout.js';
import { renderList } from '../list/component.js';
import { INVOICES } from '../list/lists/invoices.js';
import { listQuerySchema, registerListExport } from '../list/routes.js';
import { formatMoney, parseMoney } from '../money.js';
import { contextOf, refusalErrors } from '../forms.js';
import { subjectName, subjectNames } from '../queries/subjects.js';
import { viewOf } from '../routes.js';
import { confirmPage } from './confirm.js';
import { Done, FormBody, RecordParams, Slug, Text, Uuid, WorkspaceParams } from './record-schemas.js';
import { timeZoneOf, when } from '../time.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const base = (view: MemberView) => `/console/w/${view.workspace.slug}/invoices`;
type Form = Record<string, string | undefined>;
type Errors = Record<string, string>;

const MESSAGES: Record<string, string> = {
  issued: 'The invoice was issued.',
  paid: 'The payment was recorded.',
  refunded: 'The refund was recorded; mark it paid once the money has gone back.',
  refund_paid: 'The refund was marked paid.',
};

/** What the invoice is for, by the person's name or the case number, linked to it. */
function subjectLink(view: MemberView, invoice: InvoiceView, names: Map<string, string>): Html {
  const name = subjectName(names, invoice);
  return invoice.lead_id
    ? html`<a href="/console/w/${view.workspace.slug}/leads/${invoice.lead_id}">${name}</a>`
    : html`<a href="/console/w/${view.workspace.slug}/applications/${invoice.application_id}">${name}</a>`;
}

type Subject = { lead_id?: string; application_id?: string };

/** How many item lines the issue form offers (the CLI's `--item`, repeated); blank lines after the first are skipped. */
const ITEM_LINES = 5;
/** A line's field name: the first line's are the bare names, the others carry their number (`description_2`). */
const lineField = (name: string, line: number) => (line === 1 ? name : `${name}_${line}`);

function itemLine(line: number, errors: Errors, v: Form): Html {
  const f = (name: string) => lineField(name, line);
  const first = line === 1;
  return html`<fieldset class="item-line">
    <legend>Item ${line}${first ? '' : ' (optional)'}</legend>
    ${field({ name: f('description'), label: `Item ${line}: description`, value: v[f('description')], required: first, error: errors[f('description')] })}
    ${field({ name: f('quantity'), label: `Item ${line}: quantity`, type: 'number', value: v[f('quantity')] ?? (first ? '1' : ''), required: first, error: errors[f('quantity')] })}
    ${field({ name: f('unit_amount'), label: `Item ${line}: price of one`, value: v[f('unit_amount')], required: first, hint: first ? 'In the currency’s major units, such as 15000 or 15000.50.' : undefined, error: errors[f('unit_amount')] })}
  </fieldset>`;
}

/** The form that issues an invoice for the lead or application in view (up to five items, a tax rate, a due date). */
function issueSection(view: MemberView, subject: Subject, errors: Errors, v: Form): Html {
  return html`<section aria-labelledby="issue">
    <h2 id="issue">Issue an invoice</h2>
    ${errors.form ? notice(errors.form, 'alert') : ''}
    <form method="post" action="${base(view)}">
      ${csrfField(view.signedIn.csrf)}
      ${subject.lead_id ? html`<input type="hidden" name="lead_id" value="${subject.lead_id}" />` : html`<input type="hidden" name="application_id" value="${subject.application_id}" />`}
      ${field({ name: 'currency', label: 'Currency (ISO 4217)', value: v.currency ?? 'INR', required: true, error: errors.currency })}
      ${Array.from({ length: ITEM_LINES }, (_, i) => itemLine(i + 1, errors, v))}
      ${field({ name: 'tax_percent', label: 'Tax rate (%)', value: v.tax_percent ?? '0', error: errors.tax_percent })}
      ${field({ name: 'due_date', label: 'Due date', type: 'date', value: v.due_date, required: true, error: errors.due_date })}
      <button type="submit">Issue the invoice</button>
    </form>
  </section>`;
}

/** The filters: a number search and the status (the record in view is kept). */
function invoiceFilters(view: MemberView, query: Form, errors: Errors): Html {
  const kept = (['lead', 'application'] as const).filter((n) => query[n]);
  return filters({
    action: base(view),
    label: 'Find invoices',
    active: query.status ? 1 : 0,
    main: html`${kept.map((n) => html`<input type="hidden" name="${n}" value="${query[n]}" />`)}
    ${field({ name: 'q', label: 'Search', type: 'search', value: query.q ?? '', hint: 'Part of an invoice number.', error: errors.q })}`,
    more: choice({
      name: 'status',
      label: 'Status',
      options: INVOICE_STATUSES.map((x) => [x, x.replace('_', ' ')]),
      value: query.status,
      empty: 'Any status',
      error: errors.status,
    }),
  });
}

async function listPage(
  services: AppServices,
  view: MemberView,
  query: Form,
  o: { errors?: Errors; values?: Form; status?: number } = {},
) {
  const subject: Subject = {
    lead_id: UUID.test(query.lead ?? '') ? query.lead : undefined,
    application_id: UUID.test(query.application ?? '') ? query.application : undefined,
  };
  const bySubject = Boolean(subject.lead_id || subject.application_id);
  const names = bySubject ? await subjectNames(services.pool, view.workspace.id, [subject]) : new Map<string, string>();
  const title = bySubject ? `Invoices of ${subjectName(names, subject)}` : INVOICES.title;
  const list = await renderList(services, view, { ...INVOICES, title }, query);
  const issue =
    bySubject && can(view.role, 'invoices.issue') ? issueSection(view, subject, o.errors ?? {}, o.values ?? {}) : '';
  return {
    status: o.status ?? list.status,
    body: page(
      view.frame('Invoices', 'Invoices'),
      html`${invoiceFilters(view, query, list.errors)} ${list.body} ${issue}`,
    ),
  };
}

type InvoiceRecord = NonNullable<Awaited<ReturnType<typeof findInvoice>>>;
type Payment = InvoiceRecord['payments'][number];
type Csrf = ReturnType<typeof csrfField>;

async function invoicePage(
  services: AppServices,
  view: MemberView,
  id: string,
  o: { errors?: Errors; values?: Form; message?: string } = {},
) {
  const invoice = await findInvoice(services.pool, view.workspace.id, false, id);
  if (!invoice) throw new ConsoleRefusal(404, 'There is no such invoice in this workspace.');
  const names = await subjectNames(services.pool, view.workspace.id, [invoice]);
  const errors = o.errors ?? {};
  const csrf = csrfField(view.signedIn.csrf);
  const mayRefund = can(view.role, 'invoices.refund');
  const pay =
    can(view.role, 'invoices.issue') && invoice.balance > 0
      ? paymentForm(view, invoice, errors, o.values ?? {}, csrf)
      : '';
  return page(
    view.frame(`Invoice ${invoice.number}`, 'Invoices'),
    html`${notice(o.message)} ${errors.form ? notice(errors.form, 'alert') : ''}
      <p>
        For ${subjectLink(view, invoice, names)}; issued ${when(invoice.issued_at, timeZoneOf(view.workspace))}, due
        ${invoice.due_date}.
      </p>
      ${invoiceFigures(invoice)}
      <h2>Payments</h2>
      ${invoice.payments.length === 0 ? html`<p>No payment yet.</p>` : ''}
      ${invoice.payments.map((p) => paymentSection(view, invoice, p, errors, mayRefund))} ${pay}`,
  );
}

/** The items, then subtotal, tax, total, paid, balance and status. */
function invoiceFigures(invoice: InvoiceRecord) {
  const money = (amount: number) => formatMoney(amount, invoice.currency);
  return html`${table({
      caption: 'Items',
      headings: ['Item', 'Quantity', 'Price of one', 'Amount'],
      rows: invoice.line_items.map(
        (item) =>
          html`<tr>
            <td>${item.description || '(erased)'}</td>
            <td>${item.quantity}</td>
            <td>${money(item.unit_amount)}</td>
            <td>${money(item.amount)}</td>
          </tr>`,
      ),
    })}
    <dl class="facts">
      <dt>Subtotal</dt>
      <dd>${money(invoice.subtotal)}</dd>
      <dt>Tax (${invoice.tax_rate_basis_points / 100}%)</dt>
      <dd>${money(invoice.tax_amount)}</dd>
      <dt>Total</dt>
      <dd id="total">${money(invoice.total)}</dd>
      <dt>Paid</dt>
      <dd id="paid">${money(invoice.amount_paid)}</dd>
      <dt>Balance</dt>
      <dd id="balance">${money(invoice.balance)}</dd>
      <dt>Status</dt>
      <dd>${invoice.status.replace('_', ' ')}</dd>
    </dl>`;
}

function paymentForm(view: MemberView, invoice: InvoiceRecord, errors: Errors, v: Form, csrf: Csrf) {
  const id = invoice.id;
  return html`<section aria-labelledby="pay">
    <h2 id="pay">Record a payment</h2>
    <form method="post" action="${base(view)}/${id}/payments">
      ${csrf}
      ${field({ name: 'amount', label: `Amount (${invoice.currency})`, value: v.amount, required: true, error: errors.amount })}
      ${choice({ name: 'method', label: 'Method', options: PAYMENT_METHODS.map((m) => [m, m.replace('_', ' ')]), value: v.method ?? 'bank_transfer', error: errors.method })}
      ${field({ name: 'reference', label: 'Reference (optional)', value: v.reference, error: errors.reference })}
      <button type="submit">Record the payment</button>
    </form>
  </section>`;
}

/** One payment with its refunds, and (for who may refund) the form that refunds it. */
function paymentSection(view: MemberView, invoice: InvoiceRecord, p: Payment, errors: Errors, mayRefund: boolean) {
  const money = (amount: number) => formatMoney(amount, invoice.currency);
  return html`<section aria-label="Payment of ${money(p.amount)}" class="payment">
    <p>
      <strong>${money(p.amount)}</strong> by
      ${p.method.replace('_', ' ')}${p.reference ? `, reference ${p.reference}` : ''},
      ${when(p.received_at, timeZoneOf(view.workspace))}; refunded ${money(p.refunded_amount)}.
    </p>
    ${refundList(view, invoice, p, mayRefund)} ${mayRefund ? refundForm(view, invoice, p, errors) : ''}
  </section>`;
}

function refundList(view: MemberView, invoice: InvoiceRecord, p: Payment, mayRefund: boolean) {
  const id = invoice.id;
  const money = (amount: number) => formatMoney(amount, invoice.currency);
  return html`<ul>
    ${p.refunds.map(
      (r) =>
        html`<li>
          Refund of ${money(r.amount)}${r.reason ? ` (${r.reason})` : ''}: ${r.status}
          ${
            r.status === 'pending' && mayRefund
              ? html`<a href="${base(view)}/${id}/refunds/${r.id}/paid"
                  >Mark paid…<span class="visually-hidden"> the refund of ${money(r.amount)}</span></a
                >`
              : ''
          }
        </li>`,
    )}
  </ul>`;
}

/** The refund form: it leads to the page that asks before the refund is recorded. */
function refundForm(view: MemberView, invoice: InvoiceRecord, p: Payment, errors: Errors) {
  const id = invoice.id;
  const money = (amount: number) => formatMoney(amount, invoice.currency);
  return html`<form method="get" action="${base(view)}/${id}/payments/${p.id}/refunds">
    <div class="field${errors[`refund-${p.id}`] ? ' invalid' : ''}">
      <label for="refund-${p.id}">Refund amount (${invoice.currency})</label>
      <input
        id="refund-${p.id}"
        name="amount"
        ${errors[`refund-${p.id}`] ? html`aria-invalid="true" aria-describedby="refund-${p.id}-error"` : ''}
      />
      ${errors[`refund-${p.id}`] ? html`<p class="error" id="refund-${p.id}-error">${errors[`refund-${p.id}`]}</p>` : ''}
    </div>
    <div class="field">
      <label for="reason-${p.id}">Reason (optional)</label>
      <input id="reason-${p.id}" name="reason" />
    </div>
    <button type="submit">Refund…<span class="visually-hidden"> the payment of ${money(p.amount)}</span></button>
  </form>`;
}

const ISSUE_FIELDS: Record<string, string> = {
  currency: 'currency',
  line_items: 'description',
  ...Object.fromEntries(
    Array.from({ length: ITEM_LINES }, (_, i) =>
      ['description', 'quantity', 'unit_amount'].map((name) => [`line_items/${i}/${name}`, lineField(name, i + 1)]),
    ).flat(),
  ),
  tax_rate_basis_points: 'tax_percent',
  due_date: 'due_date',
};

type LineItem = { description: string; quantity: number; unit_amount: number };

/**
 * The item lines typed, in order: the first always, a later one when any of its fields is filled (a blank quantity
 * there is 1). Each error is keyed by its line's field.
 */
function itemLines(form: Form, currency: string, errors: Errors): { items: LineItem[]; sent: number[] } {
  const items: LineItem[] = [];
  const sent: number[] = [];
  for (let line = 1; line <= ITEM_LINES; line += 1) {
    const f = (name: string) => lineField(name, line);
    const typed = ['description', 'quantity', 'unit_amount'].some((n) => (form[f(n)] ?? '').trim() !== '');
    if (line > 1 && !typed) continue;
    const unit = parseMoney(form[f('unit_amount')] ?? '', currency, 0);
    if (typeof unit === 'string') errors[unit === 'Choose a currency.' ? 'currency' : f('unit_amount')] = unit;
    const quantityText = (form[f('quantity')] ?? '').trim();
    const quantity = Number(line > 1 && quantityText === '' ? '1' : quantityText);
    if (!Number.isInteger(quantity) || quantity < 1) errors[f('quantity')] = 'Enter a whole number, 1 or more.';
    const description = (form[f('description')] ?? '').trim();
    if (!description) errors[f('description')] = line === 1 ? 'Say what the invoice is for.' : 'Say what this item is.';
    items.push({ description, quantity, unit_amount: typeof unit === 'number' ? unit : 0 });
    sent.push(line);
  }
  return { items, sent };
}

function issueInput(form: Form): { errors: Errors; input?: Parameters<typeof issueInvoice>[2] } {
  const errors: Errors = {};
  const currency = (form.currency ?? '').trim().toUpperCase();
  const { items } = itemLines(form, currency, errors);
  const tax = /^\d{1,3}(\.\d{1,2})?$/.exec((form.tax_percent ?? '0').trim());
  if (!tax) errors.tax_percent = 'Enter a percentage such as 18 or 12.5.';
  if (!/^\d{4}-\d{2}-\d{2}$/.test(form.due_date ?? '')) errors.due_date = 'Enter a date.';
  if (Object.keys(errors).length) return { errors };
  const [whole, part = ''] = tax![0].split('.');
  return {
    errors,
    input: {
      subject: subjectOf({ lead_id: form.lead_id || undefined, application_id: form.application_id || undefined }),
      currency,
      line_items: items,
      tax_rate_basis_points: Number(whole) * 100 + Number(part.padEnd(2, '0')),
      due_date: form.due_date!,
    },
  };
}

/** The item lines' fields, each optional text (the first line's requiredness is checked with words, above). */
function itemFieldSchemas() {
  const sizes = { description: 500, quantity: 20, unit_amount: 40 } as const;
  const fields: Record<string, ReturnType<typeof optionalText>> = {};
  for (let line = 1; line <= ITEM_LINES; line += 1)
    for (const [name, max] of Object.entries(sizes)) fields[lineField(name, line)] = optionalText(max);
  return fields;
}
const optionalText = (max: number) => Type.Optional(Text(max));

const InvoiceQuery = listQuerySchema(INVOICES, { done: Done });
const IssueForm = FormBody({
  lead_id: Type.Optional(Uuid),
  application_id: Type.Optional(Uuid),
  currency: Type.Optional(Text(10)),
  ...itemFieldSchemas(),
  tax_percent: Type.Optional(Text(20)),
  due_date: Type.Optional(Text(20)),
});
const PaymentForm = FormBody({
  amount: Type.Optional(Text(40)),
  method: Type.Optional(Text(40)),
  reference: Type.Optional(Text(200)),
});
const RefundFields = { amount: Type.Optional(Text(40)), reason: Type.Optional(Text(500)) };
const RefundForm = FormBody({ ...RefundFields, confirm: Type.Optional(Text(10)) });
const PaymentParams = Type.Object({ slug: Slug, id: Uuid, paymentId: Uuid });
const RefundParams = Type.Object({ slug: Slug, id: Uuid, refundId: Uuid });
const refunding = { console: { operation: 'invoices.refund' } } as const;

/** The step before a refund is recorded: money is owed back to the client from then on. */
function refundConfirmation(
  view: MemberView,
  invoice: InvoiceRecord,
  payment: Payment,
  amount: { minor: number; typed: string },
  reason: string,
  error?: string,
) {
  const money = (minor: number) => formatMoney(minor, invoice.currency);
  return confirmPage(view, {
    title: `Refund ${money(amount.minor)} on invoice ${invoice.number}`,
    current: 'Invoices',
    consequence: `A refund of ${money(amount.minor)} from the payment of ${money(payment.amount)} is recorded on invoice
      ${invoice.number}${reason ? ` (${reason})` : ''}, and stays in the invoice’s history. Once you mark it paid (when
      the money has gone back), the amount paid goes down by it.`,
    action: `${base(view)}/${invoice.id}/payments/${payment.id}/refunds`,
    fields: { amount: amount.typed, reason },
    button: `Record the refund of ${money(amount.minor)}`,
    back: `${base(view)}/${invoice.id}`,
    error,
  });
}

/** The step before a refund is marked paid: the money is said to have gone back, for good. */
function refundPaidConfirmation(view: MemberView, invoice: InvoiceRecord, refundId: string, error?: string) {
  const refund = invoice.payments.flatMap((p) => p.refunds).find((r) => r.id === refundId);
  if (!refund || refund.status !== 'pending')
    throw new ConsoleRefusal(404, 'There is no pending refund of this invoice by that link.');
  const money = formatMoney(refund.amount, invoice.currency);
  return confirmPage(view, {
    title: `Mark the refund of ${money} paid`,
    current: 'Invoices',
    consequence: `The refund of ${money} on invoice ${invoice.number} will be recorded as paid back to the client. A
      paid refund cannot be reopened.`,
    action: `${base(view)}/${invoice.id}/refunds/${refundId}/paid`,
    button: `Mark the refund of ${money} paid`,
    back: `${base(view)}/${invoice.id}`,
    error,
  });
}

export function registerInvoicePages(app: TypedApp, services: AppServices): void {
  registerListExport(app, services, INVOICES);
  app.get(
    '/w/:slug/invoices',
    {
      schema: { params: WorkspaceParams, querystring: InvoiceQuery },
      config: { console: { operation: 'invoices.view' } },
    },
    async (request, reply) => {
      const answer = await listPage(services, viewOf(request), request.query as Form);
      return sendPage(reply, answer.body, answer.status);
    },
  );

  app.get(
    '/w/:slug/invoices/:id',
    {
      schema: { params: RecordParams, querystring: Type.Object({ done: Done }) },
      config: { console: { operation: 'invoices.view' } },
    },
    async (request, reply) => {
      const done = MESSAGES[request.query.done ?? ''];
      return sendPage(reply, await invoicePage(services, viewOf(request), request.params.id, { message: done }));
    },
  );

  app.post(
    '/w/:slug/invoices',
    {
      schema: { params: WorkspaceParams, body: IssueForm },
      config: { console: { operation: 'invoices.issue' } },
    },
    async (request, reply) => {
      const view = viewOf(request);
      const form = request.body;
      const query = {
        lead: form.lead_id as string | undefined,
        application: form.application_id as string | undefined,
      };
      const refuse = async (status: number, errors: Errors) =>
        sendPage(reply, (await listPage(services, view, query, { errors, values: form })).body, status);
      const { errors, input } = issueInput(form);
      if (!input) return refuse(400, errors);
      try {
        const invoice = await issueInvoice(services.store, contextOf(view)(services.now()), input);
        return reply.redirect(`${base(view)}/${invoice.id}?done=issued`, 303);
      } catch (error) {
        if (!isCommandError(error)) throw error;
        const refused = refusalErrors(error, ISSUE_FIELDS);
        return refuse(refused.status, refused.errors);
      }
    },
  );

  type Build = (invoice: InvoiceView) => ((now: Date) => InvoiceCommand) | Errors;

  /** One operation on an invoice, then back to its page saying so; a refusal next to the field it concerns. */
  async function operate(
    view: MemberView,
    reply: FastifyReply,
    o: { id: string; form: Form; field: string; done: string },
    build: Build,
  ) {
    const invoice = await findInvoice(services.pool, view.workspace.id, false, o.id);
    if (!invoice) throw new ConsoleRefusal(404, 'There is no such invoice in this workspace.');
    const refuse = async (status: number, errors: Errors) =>
      sendPage(reply, await invoicePage(services, view, o.id, { errors, values: o.form }), status);
    const command = build(invoice);
    if (typeof command !== 'function') return refuse(400, command);
    try {
      await handleInvoiceCommand(services.store, contextOf(view)(services.now()), o.id, command);
    } catch (error) {
      if (!isCommandError(error)) throw error;
      const refused = refusalErrors(error, { amount: o.field, method: 'method', reference: 'reference' }, o.field);
      return refuse(refused.status, refused.errors);
    }
    return reply.redirect(`${base(view)}/${o.id}?done=${o.done}`, 303);
  }

  app.post(
    '/w/:slug/invoices/:id/payments',
    { schema: { params: RecordParams, body: PaymentForm }, config: { console: { operation: 'invoices.issue' } } },
    (request, reply) => {
      const form = request.body;
      return operate(
        viewOf(request),
        reply,
        { id: request.params.id, form, field: 'amount', done: 'paid' },
        (invoice): ReturnType<Build> => {
          const amount = parseMoney(form.amount ?? '', invoice.currency);
          if (typeof amount === 'string') return { amount };
          const method = PAYMENT_METHODS.find((m) => m === form.method);
          if (!method) return { method: 'Choose a method.' };
          return (now) => ({
            type: 'record_payment',
            payment_id: newId(now.getTime()),
            amount,
            currency: invoice.currency,
            method,
            reference: form.reference?.trim() || null,
            now,
          });
        },
      );
    },
  );

  /** The refund asked for, read against the invoice: its payment and amount, or the refusal by the form's field. */
  async function refundAsked(view: MemberView, id: string, paymentId: string, form: Static<typeof RefundForm>) {
    const invoice = await findInvoice(services.pool, view.workspace.id, false, id);
    if (!invoice) throw new ConsoleRefusal(404, 'There is no such invoice in this workspace.');
    const payment = invoice.payments.find((p) => p.id === paymentId);
    if (!payment) throw new ConsoleRefusal(404, 'There is no such payment on this invoice.');
    const amount = parseMoney(form.amount ?? '', invoice.currency);
    return { invoice, payment, amount, reason: form.reason?.trim() ?? '' };
  }

  app.get(
    '/w/:slug/invoices/:id/payments/:paymentId/refunds',
    { schema: { params: PaymentParams, querystring: Type.Object(RefundFields) }, config: refunding },
    async (request, reply) => {
      const view = viewOf(request);
      const { id, paymentId } = request.params;
      const asked = await refundAsked(view, id, paymentId, request.query);
      if (typeof asked.amount === 'string') {
        const errors = { [`refund-${paymentId}`]: asked.amount };
        return sendPage(reply, await invoicePage(services, view, id, { errors }), 400);
      }
      const amount = { minor: asked.amount, typed: request.query.amount ?? '' };
      return sendPage(reply, refundConfirmation(view, asked.invoice, asked.payment, amount, asked.reason));
    },
  );

  app.post(
    '/w/:slug/invoices/:id/payments/:paymentId/refunds',
    { schema: { params: PaymentParams, body: RefundForm }, config: refunding },
    async (request, reply) => {
      const view = viewOf(request);
      const { id, paymentId } = request.params;
      const form = request.body;
      const field = `refund-${paymentId}`;
      const asked = await refundAsked(view, id, paymentId, form);
      const amount = asked.amount;
      if (typeof amount !== 'string' && form.confirm !== 'yes') {
        const again = 'Nothing was refunded yet: confirm the refund below.';
        return sendPage(
          reply,
          refundConfirmation(
            view,
            asked.invoice,
            asked.payment,
            { minor: amount, typed: form.amount ?? '' },
            asked.reason,
            again,
          ),
          400,
        );
      }
      return operate(view, reply, { id, form, field, done: 'refunded' }, (): ReturnType<Build> => {
        if (typeof amount === 'string') return { [field]: amount };
        return (now) => ({
          type: 'create_refund',
          refund_id: newId(now.getTime()),
          payment_id: paymentId,
          amount,
          reason: asked.reason || null,
          now,
        });
      });
    },
  );

  app.get(
    '/w/:slug/invoices/:id/refunds/:refundId/paid',
    { schema: { params: RefundParams }, config: refunding },
    async (request, reply) => {
      const view = viewOf(request);
      const invoice = await findInvoice(services.pool, view.workspace.id, false, request.params.id);
      if (!invoice) throw new ConsoleRefusal(404, 'There is no such invoice in this workspace.');
      return sendPage(reply, refundPaidConfirmation(view, invoice, request.params.refundId));
    },
  );

  app.post(
    '/w/:slug/invoices/:id/refunds/:refundId/paid',
    { schema: { params: RefundParams, body: FormBody({ confirm: Type.Optional(Text(10)) }) }, config: refunding },
    async (request, reply) => {
      const view = viewOf(request);
      const { id, refundId } = request.params;
      if (request.body.confirm !== 'yes') {
        const invoice = await findInvoice(services.pool, view.workspace.id, false, id);
        if (!invoice) throw new ConsoleRefusal(404, 'There is no such invoice in this workspace.');
        const again = 'Nothing was marked yet: confirm below.';
        return sendPage(reply, refundPaidConfirmation(view, invoice, refundId, again), 400);
      }
      return operate(view, reply, { id, form: {}, field: 'form', done: 'refund_paid' }, () => (now) => ({
        type: 'mark_refund_paid',
        refund_id: refundId,
        now,
      }));
    },
  );
}
