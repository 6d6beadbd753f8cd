import t from 'tap';
import type { Invoice } from '../../src/domain/invoices/index.js';
import { runCli } from '../support/cli.js';
import { appFixture } from '../applications/support.js';

const AS = ['--as', 'meera@northstar.example'];
/** Refunds are for owners, admins and managers (the permission table, docs/decisions.md). */
const OWNER = ['--as', 'asha@northstar.example'];

// Each CLI run starts a process of its own: the refusals beyond these two are tested on the admin
// interface and in the domain specs, which the CLI calls the same way.
t.test('the CLI issues invoices, records payments, refunds them and prints their history', async (t) => {
  // About ten CLI processes, each a Node start: minutes on a loaded machine, beyond the 180 s default.
  t.setTimeout(600_000);
  const f = await appFixture(t);
  const cli = (...args: string[]) => runCli(f.app.services.config.databaseUrl!, args, { RUN_WORKERS: 'false' });
  const json = async <T>(...args: string[]): Promise<T> => {
    const result = await cli('--json', ...args);
    t.equal(result.code, 0, `${args.slice(0, 2).join(' ')}: ${result.stderr}`);
    return JSON.parse(result.stdout) as T;
  };
  const slug = f.ws.workspace.slug;
  const application = await f.convert(await f.lead());

  const invoice = await json<Invoice>(
    'invoice',
    'issue',
    slug,
    '--application',
    application.id,
    '--currency',
    'INR',
    '--item',
    'Visa filing:1:1500000',
    '--item',
    'Courier:2:50000',
    '--tax-bp',
    '1800',
    '--due',
    '2026-12-15',
    ...AS,
  );
  t.match(invoice, {
    number: 'INV-1',
    application_id: application.id,
    subtotal: 1_600_000,
    tax_amount: 288_000,
    total: 1_888_000,
  });

  const paid = await json<Invoice>(
    'invoice',
    'pay',
    slug,
    invoice.id,
    '--amount',
    '888000',
    '--currency',
    'INR',
    '--method',
    'upi',
    '--reference',
    'UTR-9',
    ...AS,
  );
  t.match(paid, { amount_paid: 888_000, balance: 1_000_000, status: 'partially_paid' });
  const paymentId = paid.payments[0]!.id;

  const over = await cli(
    'invoice',
    'pay',
    slug,
    invoice.id,
    '--amount',
    '1000001',
    '--currency',
    'INR',
    '--method',
    'cash',
    ...AS,
  );
  t.equal(over.code, 2);
  t.match(over.stderr, /Refused \(overpayment\): The payment of 10000\.01 INR exceeds the balance of 10000\.00 INR/);
  const decimal = await cli(
    'invoice',
    'pay',
    slug,
    invoice.id,
    '--amount',
    '10.50',
    '--currency',
    'INR',
    '--method',
    'cash',
    ...AS,
  );
  t.match(decimal.stderr, /integer number of minor units/);

  const refunded = await json<Invoice>(
    'invoice',
    'refund',
    slug,
    invoice.id,
    paymentId,
    '--amount',
    '88000',
    '--reason',
    'Courier not used',
    ...OWNER,
  );
  const refundId = refunded.payments[0]!.refunds[0]!.id;
  t.match(await json<Invoice>('invoice', 'refund-paid', slug, invoice.id, refundId, ...OWNER), {
    amount_paid: 800_000,
    balance: 1_088_000,
  });

  t.same(
    await json<Invoice>('invoice', 'show', slug, invoice.id),
    (await (await f.admin(`/invoices/${invoice.id}`)).json()) as Invoice,
  );
  const human = await cli('invoice', 'show', slug, invoice.id);
  t.match(human.stdout, /total 18880\.00 INR/);
  t.match(human.stdout, /balance 10880\.00 INR/);
  const list = await json<{ data: Invoice[] }>('invoice', 'list', slug, '--application', application.id);
  t.same(
    list.data.map((i) => i.number),
    ['INV-1'],
  );

  const history = await cli('history', 'invoice', invoice.id);
  t.equal(history.code, 0, history.stderr);
  const types = history.stdout
    .split('\n')
    .filter((l) => / #\d+ {2}\S+\.\S+ {2}by /.test(l))
    .map((l) => l.split(/\s+/)[2]);
  t.same(types, ['invoice.issued', 'payment.received', 'refund.created', 'refund.paid']);
  t.match(history.stdout, /by Meera Iyer <meera@northstar.example>/);
});
