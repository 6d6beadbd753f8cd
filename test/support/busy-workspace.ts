import type pg from 'pg';
import { type AppFixture } from '../applications/support.js';
import { projections } from '../../src/projections/index.js';
import { configureWebhookRuntime } from '../../src/webhooks/runtime.js';

const TEMPERATURES = ['hot', 'warm', 'cold'];
const DAY = 24 * 60 * 60 * 1000;

async function ok(response: Response, what: string): Promise<Record<string, unknown>> {
  if (response.status >= 300) throw new Error(`${what} answered ${response.status}: ${await response.text()}`);
  return (await response.json()) as Record<string, unknown>;
}

/**
 * A workspace with a bit of everything, made through the real interfaces: live and sandbox leads with updates,
 * conversions with module work, tasks (changed, completed, reopened), invoices with payments and a refund, a document
 * waiting for its scan, and a webhook endpoint whose secret was rotated.
 */
/** Returns the webhook secrets it was shown (which no export may hold in plain text). */
export async function makeBusy(f: AppFixture, leads = 9): Promise<string[]> {
  const due = new Date(Date.now() + 3 * DAY).toISOString();
  for (let i = 0; i < leads; i++) {
    const id = await f.lead(i === leads - 1 ? f.ws.test : f.ws.live);
    const sandbox = i === leads - 1;
    for (let k = 0; k < i % 3; k++)
      await ok(
        await f.app.request(`/v1/leads/${id}`, {
          method: 'PATCH',
          key: sandbox ? f.ws.test : f.ws.live,
          json: { temperature: TEMPERATURES[(i + k) % 3] },
        }),
        'PATCH lead',
      );
    if (i % 3 === 0) {
      const view = await f.convert(id, sandbox);
      await ok(
        await f.admin(`/applications/${view.id}/modules/sop/select`, { method: 'POST', sandbox }),
        'select module',
      );
      if (i % 2 === 0)
        await ok(
          await f.admin(`/applications/${view.id}/modules/profile_review/state`, {
            method: 'PUT',
            json: { state: 'updated' },
            sandbox,
          }),
          'module state',
        );
      const task = await ok(
        await f.admin('/tasks', {
          method: 'POST',
          json: { application_id: view.id, title: `Book biometrics ${i}`, due_at: due },
          sandbox,
        }),
        'create task',
      );
      await ok(await f.admin(`/tasks/${String(task.id)}/complete`, { method: 'POST', sandbox }), 'complete task');
    }
    if (i % 4 === 1 && !sandbox) {
      await ok(
        await f.admin('/tasks', {
          method: 'POST',
          json: { lead_id: id, title: 'Call back', due_at: due, assignee: 'vikram@northstar.example' },
        }),
        'lead task',
      );
      const invoice = await ok(
        await f.admin('/invoices', {
          method: 'POST',
          json: {
            lead_id: id,
            currency: 'INR',
            line_items: [{ description: 'Counselling', quantity: 1, unit_amount: 1_000_000 + i }],
            tax_rate_basis_points: 1800,
            due_date: '2026-12-31',
          },
        }),
        'issue invoice',
      );
      const paid = await ok(
        await f.admin(`/invoices/${String(invoice.id)}/payments`, {
          method: 'POST',
          json: { amount: 500_000, currency: 'INR', method: 'bank_transfer', reference: `NEFT-${i}` },
        }),
        'payment',
      );
      const payment = (paid.payments as { id: string }[])[0]!;
      await ok(
        await f.admin(`/invoices/${String(invoice.id)}/payments/${payment.id}/refunds`, {
          method: 'POST',
          json: { amount: 100_000, reason: 'goodwill' },
        }),
        'refund',
      );
    }
  }
  // A document, received while no virus scanner answers (the test app reaches none): it waits, pending_scan.
  const form = new FormData();
  form.set('lead_id', await f.lead());
  form.set('type', 'passport');
  form.set('file', new Blob([Buffer.from('%PDF-1.4\n%%EOF\n')], { type: 'application/pdf' }), 'passport.pdf');
  const upload = await f.app.request(`/admin/v1/workspaces/${f.ws.workspace.slug}/documents`, {
    method: 'POST',
    headers: { authorization: `Bearer ${f.ws.staffToken}` },
    body: form,
  });
  if (upload.status !== 202) throw new Error(`document upload answered ${upload.status}: ${await upload.text()}`);
  // Resolved by the test (no outside network; no worker runs, so nothing is ever sent there).
  configureWebhookRuntime(f.app.services, {
    resolve: async () => [{ address: '93.184.215.14', family: 4 as const }],
  });
  const endpoint = await ok(
    await f.app.request('/v1/webhooks', {
      method: 'POST',
      key: f.ws.live,
      json: { url: 'https://hooks.example.org/visa-crm', events: ['lead.created', 'application.stage_changed'] },
    }),
    'create webhook endpoint',
  );
  const rotated = await ok(
    await f.admin(`/webhooks/${String(endpoint.id)}/rotate-secret`, { method: 'POST' }),
    'rotate secret',
  );
  // One endpoint deleted, so its log's read model (webhook_endpoints_deleted) has a row to carry over too.
  const gone = await ok(
    await f.app.request('/v1/webhooks', {
      method: 'POST',
      key: f.ws.live,
      json: { url: 'https://hooks.example.org/retired', events: ['lead.created'] },
    }),
    'create the endpoint to delete',
  );
  const deleted = await f.app.request(`/v1/webhooks/${String(gone.id)}`, { method: 'DELETE', key: f.ws.live });
  if (deleted.status !== 204) throw new Error(`DELETE /v1/webhooks answered ${deleted.status}`);
  await f.lead();
  return [String(endpoint.secret), String(rotated.secret), String(gone.secret)];
}

/** Every read model row of a workspace, table by table, as JSON (positions in this database's log left out). */
export async function readModelRows(pool: pg.Pool, tenantId: string): Promise<Record<string, unknown[]>> {
  const tables = [...projections.flatMap((p) => p.tables), 'application_numbers', 'invoice_numbers'];
  const rows: Record<string, unknown[]> = {};
  for (const table of tables) {
    const result = await pool.query<{ row: unknown }>(
      `SELECT to_jsonb(t) - 'created_tx_id' - 'created_position' AS row FROM ${table} t
        WHERE tenant_id = $1 ORDER BY to_jsonb(t)::text`,
      [tenantId],
    );
    rows[table] = result.rows.map((r) => r.row);
  }
  const workspace = await pool.query('SELECT id, slug, name, plan, status, settings FROM workspaces WHERE id = $1', [
    tenantId,
  ]);
  rows.workspaces = workspace.rows;
  // What was used per month (the limit a counter was last checked against is the next capture's to set).
  const quota = await pool.query(
    `SELECT period, metric, used::integer AS used FROM quota_counters WHERE tenant_id = $1 ORDER BY period, metric`,
    [tenantId],
  );
  rows.quota = quota.rows;
  return rows;
}

/** A workspace's events in global order as the log keeps them (content and hash; positions are the database's own). */
export async function eventRows(pool: pg.Pool, tenantId: string): Promise<unknown[]> {
  const result = await pool.query(
    `SELECT id, stream_id, revision, type, sandbox, data, metadata, created_at, encode(hash, 'hex') AS hash
       FROM events WHERE tenant_id = $1 ORDER BY tx_id, position`,
    [tenantId],
  );
  return result.rows;
}
