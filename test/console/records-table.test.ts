import t from 'tap';
import { can, PERMISSIONS, ROLES, type Operation, type Role } from '../../src/identity/permissions.js';
import { memberOf } from '../identity/support.js';
import { consoleFixture, type ConsoleClient } from './support.js';

type Fixture = Awaited<ReturnType<typeof consoleFixture>>;

/** A fresh lead (and, when asked, its application) for each probe, so an allowed change never meets an earlier one. */
async function freshLead(f: Fixture, n: number): Promise<string> {
  const response = await f.app.request('/v1/leads', {
    method: 'POST',
    key: f.ws.live,
    json: { full_name: `Probe ${n}`, phone: `+91980${String(n).padStart(7, '0')}`, consent: true },
  });
  return ((await response.json()) as { id: string }).id;
}

async function freshApplication(f: Fixture, owner: ConsoleClient, n: number): Promise<string> {
  const lead = await freshLead(f, n);
  const converted = await owner.post(`/console/w/${f.ws.workspace.slug}/leads/${lead}/convert`, { confirm: 'yes' });
  return /applications\/([0-9a-f-]{36})/.exec(converted.headers.get('location')!)![1]!;
}

const INVOICE = { currency: 'INR', description: 'Fee', quantity: '1', unit_amount: '100', due_date: '2099-01-01' };

/** A fresh paid invoice (issued and paid by the owner): its path and its payment's id. */
async function paidInvoice(f: Fixture, owner: ConsoleClient, n: number): Promise<{ path: string; payment: string }> {
  const issued = await owner.post(`/console/w/${f.ws.workspace.slug}/invoices`, {
    ...INVOICE,
    lead_id: await freshLead(f, n),
  });
  const path = new URL(issued.headers.get('location')!, f.app.baseUrl).pathname;
  await owner.post(`${path}/payments`, { amount: '100', method: 'cash' });
  const page = await owner.get(path);
  return { path, payment: /payments\/([0-9a-f-]{36})\/refunds/.exec(page.text)![1]! };
}

/** One console request per operation of the records pages: what a member of a role asks for. */
const PROBES: Partial<
  Record<
    Operation,
    (f: Fixture, c: ConsoleClient, owner: ConsoleClient, n: number) => Promise<{ status: number; text: string }>
  >
> = {
  'leads.view': (f, c) => c.get(`/console/w/${f.ws.workspace.slug}/leads?q=Probe`),
  'leads.change': async (f, c, _o, n) =>
    c.post(`/console/w/${f.ws.workspace.slug}/leads/${await freshLead(f, n)}`, { note: 'A probe note' }),
  'leads.create': async (f, c, _o, n) => {
    const form = await c.get(`/console/w/${f.ws.workspace.slug}/leads/new`);
    const key = /name="form_key"\s+value="([^"]+)"/.exec(form.text)?.[1] ?? `probe-${n}`.padEnd(22, 'x');
    return c.post(`/console/w/${f.ws.workspace.slug}/leads/new`, {
      full_name: `Walk-in ${n}`,
      phone: `+91981${String(n).padStart(7, '0')}`,
      consent: 'yes',
      form_key: key,
    });
  },
  'applications.convert': async (f, c, _o, n) =>
    c.post(`/console/w/${f.ws.workspace.slug}/leads/${await freshLead(f, n)}/convert`, { confirm: 'yes' }),
  'applications.view': async (f, c, o, n) =>
    c.get(`/console/w/${f.ws.workspace.slug}/applications/${await freshApplication(f, o, n)}`),
  'applications.change': async (f, c, o, n) =>
    c.post(`/console/w/${f.ws.workspace.slug}/applications/${await freshApplication(f, o, n)}/status`, {
      status: 'on_hold',
    }),
  'history.view': async (f, c, o, n) =>
    c.get(
      `/console/w/${f.ws.workspace.slug}/applications/${await freshApplication(f, o, n)}?as_of=${encodeURIComponent(new Date().toISOString())}`,
    ),
  'leads.erase': async (f, c, _o, n) =>
    c.post(`/console/w/${f.ws.workspace.slug}/leads/${await freshLead(f, n)}/erase`, { confirm: 'yes' }),
  'tasks.view': (f, c) => c.get(`/console/w/${f.ws.workspace.slug}/tasks?show=all`),
  'tasks.change': async (f, c, _o, n) =>
    c.post(`/console/w/${f.ws.workspace.slug}/tasks`, {
      lead_id: await freshLead(f, n),
      title: 'Probe task',
      due_at: '2099-01-01T09:00',
    }),
  'invoices.view': (f, c) => c.get(`/console/w/${f.ws.workspace.slug}/invoices`),
  'invoices.issue': async (f, c, _o, n) =>
    c.post(`/console/w/${f.ws.workspace.slug}/invoices`, { ...INVOICE, lead_id: await freshLead(f, n) }),
  'invoices.refund': async (f, c, o, n) => {
    const invoice = await paidInvoice(f, o, n);
    return c.post(`${invoice.path}/payments/${invoice.payment}/refunds`, { amount: '10' });
  },
  'documents.view': async (f, c, _o, n) =>
    c.get(`/console/w/${f.ws.workspace.slug}/documents?lead=${await freshLead(f, n)}`),
  'audit.verify': (f, c) => c.post(`/console/w/${f.ws.workspace.slug}/audit/verify`, {}),
  'workspace.export': (f, c) => c.post(`/console/w/${f.ws.workspace.slug}/audit/export`, {}),
};

t.test('every role × every records operation of the console, allowed or refused as the table says', async (t) => {
  const f = await consoleFixture(t);
  const owner = f.client();
  await owner.signIn(memberOf('owner'));
  const clients = new Map<Role, ConsoleClient>();
  for (const role of ROLES) {
    const c = f.client();
    await c.signIn(memberOf(role));
    clients.set(role, c);
  }
  const covered = Object.keys(PROBES) as Operation[];
  for (const op of covered) t.ok(PERMISSIONS[op].console, `${op} is a console operation in the table`);
  let n = 0;
  for (const op of covered)
    for (const role of ROLES) {
      const answer = await PROBES[op]!(f, clients.get(role)!, owner, ++n);
      const refused = answer.status === 403 && /Your role \([a-z]+\) does not allow this/.test(answer.text);
      t.equal(refused, !can(role, op), `${role} ${op}: ${answer.status}`);
      t.ok(answer.status < 500, `${role} ${op}: no server error`);
    }
});
