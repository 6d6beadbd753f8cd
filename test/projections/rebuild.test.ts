import t from 'tap';
import { projections } from '../../src/projections/index.js';
import { rebuildReadModels } from '../../src/projections/rebuild.js';
import type { Test } from 'tap';
import { appFixture, type AppFixture } from '../applications/support.js';
import { runCliJson } from '../support/cli.js';
import { fireDueTimers } from '../../src/commands/tasks/fire-timers.js';
import { handleApplicationCommand } from '../../src/commands/applications/application-commands.js';
import { staffContext } from '../../src/commands/run-command.js';
import { changeEndpoint, pauseEndpoint } from '../../src/commands/webhooks/endpoints.js';
import { PERSONAL_FIELDS } from '../../src/events/personal-fields.js';
import type { DomainEventType } from '../../src/events/domain-events.js';

/**
 * The event types buildHistory does not make, and why. Every other type of the event union is made (checked below),
 * so a new type fails that check until buildHistory makes it or it is listed here.
 */
const NOT_MADE: Partial<Record<DomainEventType, string>> = {
  'document.uploaded': 'the test app reaches no clamd: documents wait for their scan (documents tests rebuild them)',
  'document.rejected': 'only an uploaded (scanned) document is rejected',
  'document.infected': 'the scan verdicts need clamd',
  'document.scan_failed': 'the scan verdicts need clamd',
  'list.exported': 'no read model reads it',
};

async function snapshot(pool: import('pg').Pool): Promise<Record<string, unknown[]>> {
  const result: Record<string, unknown[]> = {};
  for (const table of projections.flatMap((p) => p.tables)) {
    // Every column, rows in a stable order: the comparison is of whole rows.
    result[table] = (await pool.query(`SELECT to_jsonb(r) AS row FROM ${table} r ORDER BY to_jsonb(r)::text`)).rows.map(
      (r: { row: unknown }) => r.row,
    );
  }
  return result;
}

/**
 * A history touching every read model through the real API: leads (live and sandbox), a duplicate enquiry, updates,
 * assignment, loss, a note, an application with staff work on it, webhook endpoints (one deleted). Returns the lead ids.
 */
async function buildHistory(t: Test, f: AppFixture): Promise<string[]> {
  const { app, ws } = f;
  // Leads: creation (live and sandbox), a duplicate enquiry, updates, assignment, loss, a note.
  const ids: string[] = [];
  for (let i = 0; i < 6; i++) {
    const key = i % 3 === 2 ? ws.test : ws.live;
    const response = await app.request('/v1/leads', {
      method: 'POST',
      key,
      json: {
        full_name: `Rebuild ${i}`,
        email: `rebuild${i}@example.com`,
        phone: `98123456${10 + i}`,
        visa_type: 'student',
        consent: true,
      },
    });
    t.equal(response.status, 201);
    ids.push(((await response.json()) as { id: string }).id);
  }
  t.equal(
    (
      await app.request('/v1/leads', {
        method: 'POST',
        key: ws.live,
        json: { full_name: 'Rebuild 0 again', email: 'rebuild0@example.com', consent: true },
      })
    ).status,
    200,
  );
  const patches: Array<[number, Record<string, unknown>]> = [
    [0, { stage_key: 'contacted', temperature: 'hot', note: 'Called, interested' }],
    [1, { owner_email: 'vikram@northstar.example', custom_fields: { budget_lakhs: 25 } }],
    // Whoever owned it first, one of these two moves it to another owner (lead.assigned).
    [1, { owner_email: 'asha@northstar.example' }],
    [4, { stage_key: 'lost', lost_reason_key: 'not_reachable' }],
  ];
  for (const [i, patch] of patches) {
    t.equal(
      (await app.request(`/v1/leads/${ids[i]}`, { method: 'PATCH', key: ws.live, json: patch })).status,
      200,
      `patch ${i}`,
    );
  }
  // Applications: a conversion and staff work on it.
  const view = await f.convert(ids[3]!);
  for (const [method, path, json] of [
    ['POST', '/modules/sop/select', undefined],
    ['PUT', '/modules/profile_review/state', { state: 'updated' }],
    ['PATCH', '/modules/sop', { details: { university: 'Leeds' } }],
    ['POST', '/status', { status: 'on_hold' }],
    ['POST', '/outcome', { outcome: 'granted' }],
  ] as const) {
    const response = await f.admin(`/applications/${view.id}${path}`, { method, ...(json ? { json } : {}) });
    t.equal(response.status, 200, `${method} ${path}`);
  }
  // A note on the case, through the command the console's note form runs.
  const author = { type: 'user' as const, user_id: 'u-rebuild', email: 'asha@northstar.example', name: 'Asha' };
  await handleApplicationCommand(
    app.services.store,
    staffContext(ws.workspace.id, false, author, new Date()),
    view.id,
    () => ({
      type: 'add_note',
      note: 'Sponsor letter promised',
      author,
      at: new Date().toISOString(),
    }),
  );
  // Tasks: one on a lead moved and completed, one on the case announced overdue (its timer row deleted), one open
  // (its timer row kept).
  const due = (minutes: number) => new Date(Date.now() + minutes * 60_000).toISOString();
  const tasks: string[] = [];
  for (const body of [
    { lead_id: ids[0], title: 'Call back', due_at: due(60) },
    { application_id: view.id, title: 'Book biometrics', due_at: due(-5) },
    { lead_id: ids[1], title: 'Send checklist', due_at: due(120), assignee: 'meera@northstar.example' },
  ]) {
    const response = await f.admin('/tasks', { method: 'POST', json: body });
    t.equal(response.status, 201, `task ${body.title}`);
    tasks.push(((await response.json()) as { id: string }).id);
  }
  t.equal((await f.admin(`/tasks/${tasks[0]}`, { method: 'PATCH', json: { due_at: due(90) } })).status, 200);
  t.equal((await f.admin(`/tasks/${tasks[0]}/complete`, { method: 'POST' })).status, 200);
  t.equal((await f.admin(`/tasks/${tasks[0]}/reopen`, { method: 'POST' })).status, 200);
  t.equal((await f.admin(`/tasks/${tasks[0]}/complete`, { method: 'POST' })).status, 200);
  t.same(
    await fireDueTimers(app.pool, app.services.store, app.services.now()),
    { due: 1, fired: 1 },
    'one task overdue',
  );
  // Invoices: one paid in part, refunded and the refund paid; one on the case.
  const invoice = await f.admin('/invoices', {
    method: 'POST',
    json: {
      lead_id: ids[0],
      currency: 'INR',
      line_items: [{ description: 'Fee', quantity: 1, unit_amount: 100_000 }],
      due_date: '2026-12-01',
    },
  });
  t.equal(invoice.status, 201);
  const invoiceId = ((await invoice.json()) as { id: string }).id;
  const payment = await f.admin(`/invoices/${invoiceId}/payments`, {
    method: 'POST',
    json: { amount: 60_000, currency: 'INR', method: 'cash' },
  });
  const paymentId = ((await payment.json()) as { payments: { id: string }[] }).payments[0]!.id;
  const refund = await f.admin(`/invoices/${invoiceId}/payments/${paymentId}/refunds`, {
    method: 'POST',
    json: { amount: 10_000 },
  });
  const refundId = ((await refund.json()) as { payments: { refunds: { id: string }[] }[] }).payments[0]!.refunds[0]!.id;
  t.equal((await f.admin(`/invoices/${invoiceId}/refunds/${refundId}/paid`, { method: 'POST' })).status, 200);
  t.equal(
    (
      await f.admin('/invoices', {
        method: 'POST',
        json: {
          application_id: view.id,
          currency: 'USD',
          line_items: [{ description: 'Fee', quantity: 2, unit_amount: 999 }],
          tax_rate_basis_points: 725,
          due_date: '2026-12-02',
        },
      })
    ).status,
    201,
  );
  // A document, received while no virus scanner answers (the test app reaches none): it waits, pending_scan.
  const form = new FormData();
  form.set('lead_id', ids[0]!);
  form.set('type', 'passport');
  form.set('file', new Blob([Buffer.from('%PDF-1.4\n%%EOF\n')], { type: 'application/pdf' }), 'passport.pdf');
  const upload = await app.request(`/admin/v1/workspaces/${ws.workspace.slug}/documents`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ws.staffToken}` },
    body: form,
  });
  t.equal(upload.status, 202, 'a document waits for its scan');
  // Webhook endpoints.
  const endpoint = await app.request('/v1/webhooks', {
    method: 'POST',
    key: ws.live,
    json: { url: 'https://93.184.216.34/crm', events: ['lead.created', 'application.outcome'] },
  });
  t.equal(endpoint.status, 201);
  // Changed, paused after failures, resumed, its secret rotated, a test event sent, its payload version and rate changed.
  const endpointId = ((await endpoint.json()) as { id: string }).id;
  const staff = staffContext(ws.workspace.id, false, author, new Date());
  await changeEndpoint(app.services, staff, endpointId, {
    url: 'https://93.184.216.34/crm/v2',
    description: 'CRM',
    events: ['lead.created', 'application.outcome', 'lead.lost'],
  });
  t.ok(await pauseEndpoint(app.services, endpointId, 50), 'the endpoint paused');
  for (const action of ['resume', 'rotate-secret', 'test'])
    t.ok((await f.admin(`/webhooks/${endpointId}/${action}`, { method: 'POST' })).ok, `endpoint ${action}`);
  // Moved back to the first payload version by its owner (PATCH /v1/webhooks/{id}).
  const moved = await app.request(`/v1/webhooks/${endpointId}`, {
    method: 'PATCH',
    key: ws.live,
    json: { payload_version: '2026-11-22' },
  });
  t.equal(moved.status, 200, 'the endpoint moved to another payload version');
  const rated = await app.request(`/v1/webhooks/${endpointId}`, {
    method: 'PATCH',
    key: ws.live,
    json: { rate_limit_per_second: 20 },
  });
  t.equal(rated.status, 200, 'the endpoint given a rate');
  const second = await app.request('/v1/webhooks', {
    method: 'POST',
    key: ws.live,
    json: { url: 'https://93.184.216.34/other', description: 'to delete', events: ['lead.lost'] },
  });
  t.equal(
    (
      await app.request(`/v1/webhooks/${((await second.json()) as { id: string }).id}`, {
        method: 'DELETE',
        key: ws.live,
      })
    ).status,
    204,
  );

  return ids;
}

t.test('rebuilding every read model from the log gives the same rows as live projection', async (t) => {
  const f = await appFixture(t);
  const { app, ws } = f;
  const ids = await buildHistory(t, f);
  // Every event type of the union (PERSONAL_FIELDS is keyed by it, whole) but NOT_MADE's is in the history.
  const made = new Set(
    (await app.pool.query<{ type: string }>('SELECT DISTINCT type FROM events')).rows.map((r) => r.type),
  );
  t.same(
    Object.keys(PERSONAL_FIELDS).filter((type) => !made.has(type) && !(type in NOT_MADE)),
    [],
    'buildHistory makes every event type but those NOT_MADE lists',
  );
  t.same(
    Object.keys(NOT_MADE).filter((type) => made.has(type)),
    [],
    'and NOT_MADE lists none it makes',
  );

  const live = await snapshot(app.pool);
  t.ok(
    Object.values(live).every((rows) => rows.length > 0),
    'every read model has rows to compare',
  );
  const rebuilt = await rebuildReadModels(app.pool, projections, app.services.personalData);
  t.ok(rebuilt.events > 10, `replayed ${rebuilt.events} events`);
  t.same(await snapshot(app.pool), live, 'the rebuilt rows equal the live ones, column for column');

  // The one command does the same: wipe by hand, rebuild through the CLI.
  await app.pool.query(`TRUNCATE ${projections.flatMap((p) => p.tables).join(', ')}`);
  const cli = await runCliJson<{ rebuilt: string[]; events: number }>(dbUrl(app.pool), ['read-models', 'rebuild']);
  t.same(
    cli.rebuilt,
    projections.map((p) => p.name),
  );
  t.same(await snapshot(app.pool), live, 'visa-crm read-models rebuild restores the same rows');
  t.equal((await app.request(`/v1/leads/${ids[0]}`, { key: ws.live })).status, 200, 'the API reads the rebuilt models');
});

function dbUrl(pool: import('pg').Pool): string {
  const options = (pool as unknown as { options: { connectionString: string } }).options;
  return options.connectionString;
}

/**
 * Gives the events new transaction ids that keep their order but cross `boundary` (999 → 1000 sorts the other way as
 * text), and moves the endpoints' creation marks with them. Positions stay as they are.
 */
async function renumberTransactions(pool: import('pg').Pool, boundary: number): Promise<number> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query(
      `CREATE TEMP TABLE renumbered ON COMMIT DROP AS
      SELECT tx_id AS old, ($1::bigint - (count(*) OVER ()) / 2 + dense_rank() OVER (ORDER BY tx_id))::text::xid8 AS new
        FROM (SELECT DISTINCT tx_id FROM events) AS t`,
      [boundary],
    );
    await client.query('UPDATE events e SET tx_id = r.new FROM renumbered r WHERE e.tx_id = r.old');
    await client.query(
      'UPDATE webhook_endpoints w SET created_tx_id = r.new FROM renumbered r WHERE w.created_tx_id = r.old',
    );
    const count = await client.query<{ n: number }>('SELECT count(*)::int AS n FROM renumbered');
    await client.query('COMMIT');
    return count.rows[0]!.n;
  } finally {
    client.release();
  }
}

t.test(
  'a rebuild over transaction ids that cross 999 → 1000, with a log longer than its batch, gives the same rows',
  async (t) => {
    const f = await appFixture(t);
    await buildHistory(t, f);
    const pool = f.app.pool;
    const transactions = await renumberTransactions(pool, 1000);
    t.ok(transactions > 10, `${transactions} transactions now numbered across 999 → 1000`);
    const spans = await pool.query<{ low: string; high: string }>(
      'SELECT min(tx_id)::text AS low, max(tx_id)::text AS high FROM events',
    );
    t.ok(Number(spans.rows[0]!.low) < 1000 && Number(spans.rows[0]!.high) >= 1000, 'the log spans the boundary');
    const live = await snapshot(pool);

    for (const batchSize of [1, 3, 7]) {
      const rebuilt = await rebuildReadModels(pool, projections, f.app.services.personalData, { batchSize });
      t.same(await snapshot(pool), live, `rebuilt in batches of ${batchSize}: the same rows`);
      t.ok(rebuilt.events > batchSize, 'the log is longer than the batch');
    }
    await pool.query(`TRUNCATE ${projections.flatMap((p) => p.tables).join(', ')}`);
    await runCliJson(dbUrl(pool), ['read-models', 'rebuild']);
    t.same(await snapshot(pool), live, 'visa-crm read-models rebuild gives the same rows');
  },
);
