import t from 'tap';
import { handleApplicationCommand } from '../../src/commands/applications/application-commands.js';
import { staffContext } from '../../src/commands/run-command.js';
import { fireDueTimers } from '../../src/commands/tasks/fire-timers.js';
import { SEALED_FIELD } from '../../src/events/personal-data.js';
import { extractPersonal, PERSONAL_FIELDS, saysPersonalData } from '../../src/events/personal-fields.js';
import { clamdSkipReason, pdfFile } from '../support/clamd.js';
import { documentFixture, documentOf } from '../documents/support.js';

/*
 * Every event type's personal fields are sealed when written through the real path: a person's lead, enquiry, notes,
 * case, task, invoice and document are made through the API and the admin interface (and the task timer), then the
 * stored rows are read as PostgreSQL holds them. Each value below is distinctive, so finding one in a row means it
 * was stored in the clear.
 */

const NEEDLES = {
  name: 'Zarina Sealtest-Qureshi',
  email: 'zarina.sealtest@example.org',
  phone: '+91 98555 01234',
  city: 'Sealabad',
  message: 'Call me after the monsoon',
  secondMessage: 'Still waiting to hear',
  note: 'She mentioned her brother in Leeds',
  caseNote: 'Her brother in Leeds will sponsor the fees',
  details: 'PassportQ5550001',
  taskTitle: 'Chase Zarina passport copy',
  taskTitleChanged: 'Chase Zarina bank letter',
  lineItem: 'Counselling for Zarina Q',
  reference: 'UTR-ZARINA-777',
  refundReason: 'Zarina withdrew her file',
  filename: 'Passport Zarina Q.pdf',
  rejection: 'Zarina photo unreadable',
  lostName: 'Lorenzo Lostlead-Pereira',
};
const STORED_PHONE = '9855501234';

const skip = clamdSkipReason();

t.test('every personal field of every event type is sealed in the stored row', { skip }, async (t) => {
  const f = await documentFixture(t);
  const { app, ws } = f;
  const ok = async (response: Response, status: number, what: string) => {
    if (response.status !== status) throw new Error(`${what}: ${response.status} ${await response.text()}`);
    return (await response.json()) as Record<string, unknown> & { id: string };
  };
  const person = { full_name: NEEDLES.name, email: NEEDLES.email, phone: NEEDLES.phone, city: NEEDLES.city };

  // The lead: created with a message, a second enquiry (a duplicate), a note, an owner, a change.
  const lead = await ok(
    await app.request('/v1/leads', {
      method: 'POST',
      key: ws.live,
      json: { ...person, message: NEEDLES.message, consent: true },
    }),
    201,
    'lead',
  );
  await ok(
    await app.request('/v1/leads', {
      method: 'POST',
      key: ws.live,
      json: { ...person, message: NEEDLES.secondMessage, consent: true },
    }),
    200,
    'duplicate',
  );
  const patch = (id: string, json: unknown) => app.request(`/v1/leads/${id}`, { method: 'PATCH', key: ws.live, json });
  await ok(await patch(lead.id, { note: NEEDLES.note }), 200, 'note');
  await ok(await patch(lead.id, { owner_email: 'asha@northstar.example' }), 200, 'owner');
  await ok(await patch(lead.id, { temperature: 'hot' }), 200, 'change');
  const lost = await ok(
    await app.request('/v1/leads', {
      method: 'POST',
      key: ws.live,
      json: { full_name: NEEDLES.lostName, email: 'lorenzo.lostlead@example.org', consent: true },
    }),
    201,
    'second lead',
  );
  await ok(await patch(lost.id, { stage_key: 'lost', lost_reason_key: 'not_reachable' }), 200, 'lost');

  // The case: module details saved, then a module change that carries them.
  const application = await f.convert(lead.id);
  const base = `/applications/${application.id}`;
  const details = { details: { passport: NEEDLES.details } };
  await ok(await f.admin(`${base}/modules/sop/select`, { method: 'POST' }), 200, 'select');
  await ok(await f.admin(`${base}/modules/sop`, { method: 'PATCH', json: details }), 200, 'details');
  await ok(await f.admin(`${base}/modules/sop/state`, { method: 'PUT', json: { state: 'updated' } }), 200, 'module');
  // A note on the case, through the command the console's note form runs.
  const author = { type: 'user' as const, user_id: 'u-seal', email: 'asha@example.com', name: 'Asha' };
  await handleApplicationCommand(
    app.services.store,
    staffContext(ws.workspace.id, false, author, new Date()),
    application.id,
    () => ({ type: 'add_note', note: NEEDLES.caseNote, author, at: new Date().toISOString() }),
  );

  // A task, changed, then announced overdue by the timer.
  const task = await ok(
    await f.admin('/tasks', {
      method: 'POST',
      json: { lead_id: lead.id, title: NEEDLES.taskTitle, due_at: new Date(Date.now() + 60_000).toISOString() },
    }),
    201,
    'task',
  );
  await ok(
    await f.admin(`/tasks/${task.id}`, { method: 'PATCH', json: { title: NEEDLES.taskTitleChanged } }),
    200,
    'task change',
  );
  const fired = await fireDueTimers(app.pool, app.services.store, new Date(Date.now() + 120_000));
  t.equal(fired.fired, 1, 'the task timer announced the task overdue');

  // An invoice, paid, part refunded, the refund paid out.
  const invoice = await ok(
    await f.admin('/invoices', {
      method: 'POST',
      json: {
        lead_id: lead.id,
        currency: 'INR',
        line_items: [{ description: NEEDLES.lineItem, quantity: 1, unit_amount: 100_000 }],
        tax_rate_basis_points: 0,
        due_date: '2026-12-31',
      },
    }),
    201,
    'invoice',
  );
  const paid = (await ok(
    await f.admin(`/invoices/${invoice.id}/payments`, {
      method: 'POST',
      json: { amount: 100_000, currency: 'INR', method: 'upi', reference: NEEDLES.reference },
    }),
    201,
    'payment',
  )) as unknown as { payments: { id: string }[] };
  const payment = paid.payments[0]!.id;
  const refunded = (await ok(
    await f.admin(`/invoices/${invoice.id}/payments/${payment}/refunds`, {
      method: 'POST',
      json: { amount: 10_000, reason: NEEDLES.refundReason },
    }),
    201,
    'refund',
  )) as unknown as { payments: { refunds: { id: string }[] }[] };
  const refund = refunded.payments[0]!.refunds[0]!.id;
  await ok(await f.admin(`/invoices/${invoice.id}/refunds/${refund}/paid`, { method: 'POST' }), 200, 'refund paid');

  // A document, scanned clean, then rejected.
  const document = await documentOf(
    t,
    await f.upload({
      lead_id: lead.id,
      type: 'passport',
      file: { bytes: pdfFile('scan'), name: NEEDLES.filename, type: 'application/pdf' },
    }),
    201,
  );
  await ok(
    await f.admin(`/documents/${document.id}/reject`, { method: 'POST', json: { reason: NEEDLES.rejection } }),
    200,
    'reject',
  );

  // The rows as stored, and the same events as the store reads them (opened with their keys).
  const rows = (
    await app.pool.query<{ id: string; stream_id: string; type: string; data: Record<string, unknown> }>(
      'SELECT id, stream_id, type, data FROM events WHERE tenant_id = $1 ORDER BY position',
      [ws.workspace.id],
    )
  ).rows;
  const opened = new Map<string, Record<string, unknown>>();
  for (const stream of new Set(rows.map((r) => r.stream_id)))
    for (const event of await app.services.store.readStream(stream)) opened.set(event.id, event.data);

  const needles = [...Object.values(NEEDLES).filter((n) => n !== NEEDLES.phone), STORED_PHONE];
  const said = new Set<string>();
  for (const row of rows) {
    const text = JSON.stringify(row.data).toLowerCase();
    t.same(
      needles.filter((n) => text.includes(n.toLowerCase())),
      [],
      `${row.type} (${row.id}): no personal value in the clear`,
    );
    const { [SEALED_FIELD]: _sealed, ...clear } = row.data;
    t.same(extractPersonal(row.type, clear).values, [], `${row.type}: every personal field holds its erased value`);
    const data = opened.get(row.id)!;
    if (saysPersonalData(row.type, data)) {
      said.add(row.type);
      t.ok(SEALED_FIELD in row.data, `${row.type}: what it says of the person is sealed`);
    }
  }

  // Every type that has personal fields was written saying something personal (application.opened's modules have
  // no details when a case opens: the details are written by module_details_saved and module_updated).
  const withFields = Object.entries(PERSONAL_FIELDS)
    .filter(([, fields]) => fields.length > 0)
    .map(([type]) => type)
    .filter((type) => type !== 'application.opened');
  t.same(
    withFields.filter((type) => !said.has(type)),
    [],
    'every event type with personal fields was written with a personal value, and sealed',
  );
});
