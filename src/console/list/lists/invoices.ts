import type { InvoiceView as Invoice } from '../../../http/schemas/invoice.js';
import { html } from '../../html.js';
import { formatMoney } from '../../money.js';
import { textColumn, timeColumn } from '../cells.js';
import type { ListSpec, Query } from '../spec.js';
import { FilterSteps, UUID, words } from './shared.js';
import { subjectCell, subjectJoins, subjectPerson, subjectSelect } from './subject.js';

export interface InvoiceRow {
  id: string;
  body: Invoice;
  subject: string;
  created_at: Date;
}

export const INVOICE_FILTERS = ['q', 'status', 'lead', 'application'] as const;

/** Invoices by number (a search), status, and the lead or application they are for. */
export function invoiceFilter(query: Query): FilterSteps {
  const f = new FilterSteps();
  f.search(query, 'lower(i.number)', 'an invoice number');
  f.equals(query, 'status', `i.body->>'status'`);
  for (const [name, column] of [
    ['lead', 'i.lead_id'],
    ['application', 'i.application_id'],
  ] as const) {
    const id = query[name];
    if (id && UUID.test(id)) f.step((w) => w.add((n) => `${column} = ${n}::uuid`, id));
    else if (id) f.errors[name] = 'This is not the id of a record.';
  }
  return f;
}

const money = (key: 'total' | 'amount_paid' | 'balance', label: string) => ({
  key: key === 'amount_paid' ? 'paid' : key,
  label,
  sort: { sql: `coalesce((i.body->>'${key}')::numeric, 0)`, type: 'numeric' as const },
  cell: (r: InvoiceRow) => formatMoney(r.body[key], r.body.currency),
  text: (r: InvoiceRow) => formatMoney(r.body[key], r.body.currency),
});

export const INVOICES: ListSpec<InvoiceRow> = {
  name: 'invoices',
  title: 'Invoices',
  noun: { one: 'invoice', many: 'invoices' },
  view: 'invoices.view',
  from: `invoices i ${subjectJoins('i')}`,
  select: `i.id, i.body, i.created_at, ${subjectSelect('i')} AS subject`,
  scope: ['i.tenant_id = $1', 'i.sandbox = false'],
  id: { sql: 'i.id', type: 'uuid' },
  person: subjectPerson('i'),
  defaultSort: { key: 'issued', dir: 'desc' },
  filterNames: INVOICE_FILTERS,
  filter: invoiceFilter,
  rowId: (r) => r.id,
  rowName: (r) => r.body.number,
  columns: [
    {
      key: 'number',
      label: 'Number',
      sort: { sql: 'i.number', type: 'text' },
      cell: (r, ctx) => html`<a href="/console/w/${ctx.view.workspace.slug}/invoices/${r.id}">${r.body.number}</a>`,
      text: (r) => r.body.number,
    },
    { key: 'for', label: 'For', cell: (r, ctx) => subjectCell(ctx, r.body, r.subject), text: (r) => r.subject },
    money('total', 'Total'),
    money('amount_paid', 'Paid'),
    money('balance', 'Balance'),
    textColumn<InvoiceRow>('status', 'Status', (r) => words(r.body.status), `coalesce(i.body->>'status', '')`),
    textColumn<InvoiceRow>('due', 'Due', (r) => r.body.due_date, `coalesce(i.body->>'due_date', '')`),
    timeColumn<InvoiceRow>('issued', 'Issued', 'i.created_at', (r) => r.created_at),
  ],
};
