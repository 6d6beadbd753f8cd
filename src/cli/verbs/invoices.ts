import type { Command } from 'commander';
import { issueInvoice, handleInvoiceCommand } from '../../commands/invoices/invoice-commands.js';
import { subjectOf } from '../../commands/subject.js';
import {
  formatMinor,
  PAYMENT_METHODS,
  type Invoice,
  type InvoiceCommand,
  type PaymentMethod,
} from '../../domain/invoices/index.js';
import { findInvoice, listInvoices } from '../../projections/invoices.js';
import { newId } from '../../shared/ids.js';
import { staffOptions, withStaff, type StaffOptions } from '../staff.js';
import { requireWorkspace, withServices } from '../context.js';
import { CliError, notFoundIn, output, table } from '../output.js';

function describe(invoice: Invoice): string {
  const money = (amount: number) => formatMinor(amount, invoice.currency);
  const refunds = invoice.payments.flatMap((p) => p.refunds);
  return [
    `${invoice.number}  (${invoice.id})  ${invoice.status}`,
    `for ${invoice.lead_id ? `lead ${invoice.lead_id}` : `application ${invoice.application_id}`}; issued ${invoice.issued_at}; due ${invoice.due_date}`,
    table(
      invoice.line_items.map((i) => ({ ...i, unit: money(i.unit_amount), total: money(i.amount) })),
      ['description', 'quantity', 'unit', 'total'],
    ),
    `subtotal ${money(invoice.subtotal)}; tax ${invoice.tax_rate_basis_points / 100}% ${money(invoice.tax_amount)}; total ${money(invoice.total)}`,
    `paid ${money(invoice.amount_paid)}; balance ${money(invoice.balance)}`,
    '',
    'payments:',
    table(
      invoice.payments.map((p) => ({ ...p, amount: money(p.amount), refunded: money(p.refunded_amount) })),
      ['id', 'amount', 'method', 'reference', 'received_at', 'refunded'],
    ),
    'refunds:',
    table(
      refunds.map((r) => ({ ...r, amount: money(r.amount) })),
      ['id', 'payment_id', 'amount', 'status', 'reason', 'paid_at'],
    ),
  ].join('\n');
}

/** An integer number of minor units from the command line (no decimal point: 150000 is 1500.00 INR). */
function minorUnits(option: string, value: string): number {
  if (!/^\d{1,13}$/.test(value))
    throw new CliError(`${option} is an integer number of minor units (150000 is 1500.00 INR)`);
  return Number(value);
}

/** `--item "<description>:<quantity>:<unit amount in minor units>"`. */
function lineItem(value: string, previous: { description: string; quantity: number; unit_amount: number }[] = []) {
  const match = /^(.+):(\d{1,5}):(\d{1,13})$/.exec(value);
  if (!match) throw new CliError(`--item is "<description>:<quantity>:<unit amount in minor units>", not ${value}`);
  return [...previous, { description: match[1]!, quantity: Number(match[2]), unit_amount: Number(match[3]) }];
}

/** `visa-crm invoice …`: issue invoices, record payments, refund them. Amounts are integers in minor units. */
export function registerInvoiceVerbs(program: Command, json: () => boolean): void {
  const invoice = program
    .command('invoice')
    .description('invoices, payments and refunds (amounts are integers in minor units of the currency)');
  const print = (view: Invoice) => output(json(), view, () => describe(view));

  staffOptions(
    invoice
      .command('issue <workspace>')
      .description('issue an invoice for a lead or an application (invoice.issued)')
      .option('--lead <leadId>', 'the lead invoiced')
      .option('--application <applicationId>', 'the application invoiced')
      .requiredOption('--currency <code>', 'ISO 4217 currency code, for example INR')
      .requiredOption('--item <description:quantity:unitAmount>', 'a line item (repeat for more)', lineItem)
      .option('--tax-bp <basisPoints>', 'tax rate in hundredths of a percent (1800 is 18%)', '0')
      .requiredOption('--due <date>', 'the due date, YYYY-MM-DD'),
  ).action(
    async (
      ws: string,
      o: StaffOptions & {
        lead?: string;
        application?: string;
        currency: string;
        item: ReturnType<typeof lineItem>;
        taxBp: string;
        due: string;
      },
    ) => {
      const subject = (() => {
        try {
          return subjectOf({ lead_id: o.lead, application_id: o.application });
        } catch {
          throw new CliError('Name exactly one of --lead and --application');
        }
      })();
      if (!/^\d{1,5}$/.test(o.taxBp)) throw new CliError('--tax-bp is an integer from 0 to 10000');
      print(
        await withStaff(ws, o, (s, _ws, context) =>
          issueInvoice(s.store, context, {
            subject,
            currency: o.currency,
            line_items: o.item,
            tax_rate_basis_points: Number(o.taxBp),
            due_date: o.due,
          }),
        ),
      );
    },
  );

  invoice
    .command('show <workspace> <invoiceId>')
    .option('--sandbox', 'read sandbox (test-mode) data')
    .description('show an invoice with its payments and refunds')
    .action(async (ws: string, id: string, o: { sandbox?: boolean }) => {
      const view = await withServices(async (s) => {
        const workspace = await requireWorkspace(s, ws);
        const found = await findInvoice(s.pool, workspace.id, o.sandbox ?? false, id);
        if (!found) throw notFoundIn('invoice', id, workspace, o.sandbox);
        return found;
      });
      print(view);
    });

  invoice
    .command('list <workspace>')
    .option('--lead <leadId>', "only this lead's invoices")
    .option('--application <applicationId>', "only this application's invoices")
    .option('--sandbox', 'read sandbox (test-mode) data')
    .description('list invoices, newest first')
    .action(async (ws: string, o: { lead?: string; application?: string; sandbox?: boolean }) => {
      const invoices = await withServices(async (s) => {
        const workspace = await requireWorkspace(s, ws);
        return listInvoices(s.pool, workspace.id, o.sandbox ?? false, {
          lead_id: o.lead,
          application_id: o.application,
        });
      });
      output(json(), { data: invoices }, () =>
        table(
          invoices.map((i) => ({
            ...i,
            total: formatMinor(i.total, i.currency),
            balance: formatMinor(i.balance, i.currency),
          })),
          ['number', 'id', 'status', 'total', 'balance', 'due_date'],
        ),
      );
    });

  const operation = (
    name: string,
    args: string,
    description: string,
    build: (positional: string[], o: Record<string, string>, now: Date) => InvoiceCommand,
    extra: (c: Command) => Command,
  ) =>
    extra(
      staffOptions(invoice.command(`${name} <workspace> <invoiceId> ${args}`.trim()).description(description)),
    ).action(async (...received: unknown[]) => {
      // commander passes the positional arguments, then the options object, then the command.
      const positional = received.slice(0, -2) as string[];
      const o = received[received.length - 2] as StaffOptions & Record<string, string>;
      const [ws, id, ...rest] = positional;
      print(
        await withStaff(
          ws!,
          o,
          async (s, _ws, context) =>
            (await handleInvoiceCommand(s.store, context, id!, (now) => build(rest, o, now))).state,
        ),
      );
    });

  operation(
    'pay',
    '',
    'record a payment against the invoice (payment.received)',
    (_p, o, now) => {
      if (!(PAYMENT_METHODS as readonly string[]).includes(o.method!))
        throw new CliError(`--method is one of ${PAYMENT_METHODS.join(', ')}`);
      return {
        type: 'record_payment',
        payment_id: newId(now.getTime()),
        amount: minorUnits('--amount', o.amount!),
        currency: o.currency!,
        method: o.method as PaymentMethod,
        reference: o.reference ?? null,
        now,
      };
    },
    (c) =>
      c
        .requiredOption('--amount <minorUnits>', 'the amount received, in minor units')
        .requiredOption('--currency <code>', "the payment's currency (must be the invoice's)")
        .requiredOption('--method <method>', PAYMENT_METHODS.join(' | '))
        .option('--reference <reference>', 'the bank or gateway reference'),
  );
  operation(
    'refund',
    '<paymentId>',
    'create a refund of a payment, pending until marked paid',
    ([paymentId], o, now) => ({
      type: 'create_refund',
      refund_id: newId(now.getTime()),
      payment_id: paymentId!,
      amount: minorUnits('--amount', o.amount!),
      reason: o.reason ?? null,
      now,
    }),
    (c) =>
      c
        .requiredOption('--amount <minorUnits>', 'the amount to refund, in minor units')
        .option('--reason <reason>', 'why'),
  );
  operation(
    'refund-paid',
    '<refundId>',
    'mark a refund paid out (refund.paid)',
    ([refundId], _o, now) => ({ type: 'mark_refund_paid', refund_id: refundId!, now }),
    (c) => c,
  );
}
