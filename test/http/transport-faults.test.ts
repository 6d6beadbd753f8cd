// Faults in one workspace's database work never reach another workspace's requests: a statement failing at any
// position of a command's round trips, a value the protocol cannot carry, and server processes ended under the pool.
import { randomUUID } from 'node:crypto';
import t from 'tap';
import { createEndpoint } from '../../src/commands/webhooks/endpoints.js';
import { staffContext } from '../../src/commands/run-command.js';
import { seedWorkspace, type SeededWorkspace } from '../support/app.js';
import { faultInjector } from '../support/fault-injection.js';
import { leadBody, leadsFixture, type LeadsFixture } from '../leads/helpers.js';

const PUBLIC_RECEIVER = 'https://93.184.216.34/crm'; // never delivered to: no workers run in these tests

async function json(response: Response): Promise<Record<string, unknown>> {
  const text = await response.text();
  return text ? (JSON.parse(text) as Record<string, unknown>) : {};
}

/** The requests whose transactions the faults hit, for a workspace with a live secret key. */
function operations(f: LeadsFixture) {
  return {
    'POST /v1/leads': async (ws: SeededWorkspace) =>
      f.request('/v1/leads', { method: 'POST', key: ws.live, json: leadBody() }),
    'PATCH /v1/leads/{id}': async (ws: SeededWorkspace, leadId: string) =>
      f.request(`/v1/leads/${leadId}`, { method: 'PATCH', key: ws.live, json: { note: `call ${randomUUID()}` } }),
    'POST /v1/webhooks': async (ws: SeededWorkspace) => {
      const response = await f.request('/v1/webhooks', {
        method: 'POST',
        key: ws.live,
        json: { url: PUBLIC_RECEIVER, events: ['lead.created'] },
      });
      if (response.status === 201) {
        // Keep under the plan's endpoint limit.
        const { id } = (await json(response.clone())) as { id: string };
        await f.request(`/v1/webhooks/${id}`, { method: 'DELETE', key: ws.live });
      }
      return response;
    },
  };
}

async function backendGone(f: LeadsFixture, pid: number): Promise<boolean> {
  for (let i = 0; i < 100; i++) {
    if ((await f.pool.query('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [pid])).rowCount === 0) return true;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return false;
}

/** Workspace B's requests, each of which must succeed. */
async function otherWorkspaceServed(f: LeadsFixture, other: SeededWorkspace, leadId: string): Promise<number[]> {
  const ops = operations(f);
  return [
    (await ops['POST /v1/leads'](other)).status,
    (await ops['PATCH /v1/leads/{id}'](other, leadId)).status,
    (await ops['POST /v1/webhooks'](other)).status,
    (await f.request('/v1/leads?limit=5', { key: other.live })).status,
  ];
}

t.test('a statement failing at any position of a command’s transaction fails that request alone', async (t) => {
  const f = await leadsFixture(t);
  const other = await seedWorkspace(f, { plan: 'enterprise' });
  const faults = faultInjector(t);
  const ops = operations(f);
  const aLead = String((await f.post(leadBody())).body.id);
  const bLead = String(((await json(await ops['POST /v1/leads'](other))) as { id: string }).id);

  for (const [name, op] of Object.entries(ops)) {
    // Learn how many statements follow BEGIN in this command's transaction (COMMIT included).
    const counted = faults.count();
    const ok = await op(f, aLead);
    t.ok(ok.status < 300, `${name} succeeds unharmed`);
    const statements = counted();
    t.ok(statements >= 2, `${name}: ${statements} statements after BEGIN`);

    for (let position = 1; position <= statements; position++) {
      const leadsBefore = (await f.pool.query('SELECT count(*)::int AS n FROM leads')).rows[0].n as number;
      faults.arm(position);
      const failed = await op(f, aLead);
      const fault = faults.fired();
      t.ok(fault, `${name} #${position}: the fault replaced ${fault?.replaced.split(/\s+/).slice(0, 3).join(' ')}`);
      const body = await json(failed);
      t.equal(failed.status, 500, `${name} #${position}: that request fails`);
      t.match(body, { error: 'internal_error', request_id: /^req_/ }, 'in the Error shape');
      t.notMatch(JSON.stringify(body), /division|injected|SELECT|pg_/i, 'with nothing internal in it');
      t.ok(await backendGone(f, fault!.pid), `${name} #${position}: its connection was destroyed`);
      t.equal(
        (await f.pool.query('SELECT count(*)::int AS n FROM leads')).rows[0].n,
        leadsBefore,
        'and nothing of it was kept',
      );
      t.same(await otherWorkspaceServed(f, other, bLead), [201, 200, 201, 200], 'the other workspace is served');
      t.ok((await op(f, aLead)).status < 300, 'and so is the next request of the same workspace');
    }
  }
});

t.test('a value the protocol cannot carry, sent past validation, breaks nothing for other workspaces', async (t) => {
  const f = await leadsFixture(t);
  const others = [await seedWorkspace(f, { plan: 'enterprise' }), await seedWorkspace(f, { plan: 'enterprise' })];
  // Straight to the command, as if the request's validation had let it through.
  const refused = createEndpoint(
    f.services,
    staffContext(f.workspace.id, false, { type: 'system', name: 'test' }, new Date()),
    f.workspace,
    { url: PUBLIC_RECEIVER, description: 'nul \u0000 inside', events: ['lead.created'] },
  );
  await t.rejects(refused, 'PostgreSQL refuses the text');
  const statuses: number[] = [];
  for (let i = 0; i < 12; i++) {
    const ws = others[i % 2]!;
    const response = await f.request('/v1/webhooks', {
      method: 'POST',
      key: ws.live,
      json: { url: `${PUBLIC_RECEIVER}/${i}`, description: `endpoint ${i}`, events: ['lead.created'] },
    });
    statuses.push(response.status);
  }
  t.same(statuses, Array(12).fill(201), 'the next twelve creations of other workspaces all succeed');
});

t.test(
  'server processes ended under the pool: the next requests of another workspace succeed every time',
  async (t) => {
    const f = await leadsFixture(t);
    const other = await seedWorkspace(f, { plan: 'enterprise' });
    const bLead = String(((await json(await operations(f)['POST /v1/leads'](other))) as { id: string }).id);
    const database = (await f.pool.query<{ db: string }>('SELECT current_database() AS db')).rows[0]!.db;
    const admin = new (await import('pg')).default.Client({ connectionString: process.env.DATABASE_URL });
    await admin.connect();
    t.teardown(() => admin.end());
    for (let round = 0; round < 5; round++) {
      // Warm several pooled connections, then end every server process of the service's database.
      await Promise.all(Array.from({ length: 6 }, () => f.post(leadBody())));
      const ended = await admin.query<{ n: number }>(
        'SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity WHERE datname = $1',
        [database],
      );
      t.ok(ended.rows[0]!.n > 0, `round ${round + 1}: ${ended.rows[0]!.n} server processes ended`);
      t.same(await otherWorkspaceServed(f, other, bLead), [201, 200, 201, 200], `round ${round + 1}: served`);
    }
  },
);
