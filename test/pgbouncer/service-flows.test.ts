import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import t from 'tap';
import { startServiceProcess } from '../support/service-process.js';
import { Webhook } from 'standardwebhooks';
import { LISTENER_NAME } from '../../src/keys/key-cache.js';
import { SCOPES } from '../../src/shared/enums.js';
import { demoDefinition, TEST_ENCRYPTION_KEY } from '../support/app.js';
import { runCli } from '../support/cli.js';
import { databaseForPooler, pgbouncerSkipReason, startPgBouncer } from '../support/pgbouncer.js';
import { leadBody } from '../leads/helpers.js';
import { TestReceiver, waitFor } from '../webhooks/support/receiver.js';
import { makeTestPki } from '../webhooks/support/tls.js';

// The real service (`visa-crm serve`, workers on) and the real CLI with DATABASE_URL naming a transaction-pooling
// PgBouncer and DATABASE_DIRECT_URL the PostgreSQL server behind it: the CLI's first command migrates the new database,
// leads are created, updated and synced, a lead becomes an application, webhooks reach a real HTTPS receiver, and a
// key revoked by the CLI is refused by the service. What needs a session of its own (LISTEN, the migrations' lock)
// must be on a direct connection, never on one of the pooler's.

const skip = pgbouncerSkipReason();
const STAFF = 'vikram@northstar.example';
/** The migrations' advisory lock (src/storage/migrate.ts). */
const MIGRATION_LOCK = 7_311_001;

t.test('the service and the CLI work through a transaction pooler', { skip }, async (t) => {
  const db = await databaseForPooler(t);
  const bouncer = await startPgBouncer(t, { poolSize: 4 });
  const pooledUrl = bouncer.url(db.name);
  const direct = new pg.Pool({ connectionString: db.directUrl, max: 2 });
  t.teardown(() => direct.end());
  const pki = makeTestPki();
  t.teardown(() => pki.cleanup());
  const receiver = await TestReceiver.start(pki);
  t.teardown(() => receiver.close());
  receiver.reply = () => ({ status: 204 });

  const urls = { DATABASE_DIRECT_URL: db.directUrl, RUN_WORKERS: 'false' };
  const cli = async <T>(...args: string[]): Promise<T> => {
    const result = await runCli(pooledUrl, ['--json', ...args], urls);
    if (result.code !== 0) throw new Error(`visa-crm ${args.join(' ')} failed (${result.code}): ${result.stderr}`);
    return JSON.parse(result.stdout) as T;
  };
  const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'vcrm-pooler-'));
  t.teardown(() => fs.rmSync(folder, { recursive: true, force: true }));
  const definition = demoDefinition({
    limits: { rate: { scopes: { 'webhooks:manage': { capacity: 100, refill_per_second: 10 } } } },
  });
  const file = path.join(folder, 'workspace.json');
  fs.writeFileSync(file, JSON.stringify(definition));
  await cli('workspace', 'apply', file);
  const migrated = await direct.query<{ n: number }>('SELECT count(*)::int AS n FROM schema_migrations');
  t.ok(migrated.rows[0]!.n > 0, "the CLI's first command migrated the new database");
  const key = await cli<{ id: string; key: string }>('key', 'create', definition.slug, '--scopes', SCOPES.join(','));

  // Every command takes the migrations' session lock first: held here, a command waits for it, on a direct session.
  const holder = await direct.connect();
  await holder.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
  const listing = cli<unknown[]>('workspace', 'list');
  const waiting = await waitFor(async () => {
    const rows = await direct.query<{ pid: number }>(
      `SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND objid = $1 AND NOT granted
          AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
      [MIGRATION_LOCK],
    );
    return rows.rows[0]?.pid;
  }, "the command's wait for the migrations' lock");
  t.notOk(
    (await bouncer.serverPids(db.name)).includes(waiting),
    "the migrations' lock is asked for on a direct session",
  );
  await holder.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]);
  holder.release();
  t.equal((await listing).length, 1, 'and once it is free the command runs');

  const service = await startServiceProcess({
    ...process.env,
    DATABASE_URL: pooledUrl,
    DATABASE_DIRECT_URL: db.directUrl,
    SECRET_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY,
    WEBHOOK_ALLOW_LOOPBACK: 'true',
    NODE_EXTRA_CA_CERTS: pki.caFile,
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'info',
    RUN_WORKERS: 'true',
  });
  t.teardown(() => {
    if (service.child.exitCode === null && service.child.signalCode === null) service.child.kill('SIGKILL');
  });
  const api = async (method: string, route: string, json?: unknown, bearer = key.key) => {
    const response = await fetch(`${service.baseUrl}${route}`, {
      method,
      headers: {
        authorization: `Bearer ${bearer}`,
        ...(json === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: json === undefined ? undefined : JSON.stringify(json),
    });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  };

  // Both listeners hold a direct session: the key cache's (found by its name, its last statement reads the keys)
  // and the workers' (its last statement is a LISTEN). None of the pooler's sessions runs LISTEN.
  const listening = () =>
    direct.query<{ pid: number }>(
      `SELECT pid FROM pg_stat_activity
        WHERE datname = current_database() AND (application_name = $1 OR query LIKE 'LISTEN%')`,
      [LISTENER_NAME],
    );
  const listeners = await waitFor(async () => {
    const rows = (await listening()).rows;
    return rows.length === 2 ? rows.map((r) => r.pid) : undefined;
  }, 'two LISTEN sessions');
  const pooled = await bouncer.serverPids(db.name);
  t.ok(pooled.length > 0, 'the service reaches the database through the pooler');
  t.same(
    listeners.filter((pid) => pooled.includes(pid)),
    [],
    'no LISTEN on a pooled session',
  );
  const locks = await direct.query(
    `SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND objid = $1
        AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
    [MIGRATION_LOCK],
  );
  t.equal(locks.rowCount, 0, 'no session advisory lock is left held by the migrations');

  const endpoint = await api('POST', '/v1/webhooks', {
    url: receiver.url('127.0.0.1'),
    events: ['lead.created', 'lead.updated'],
  });
  t.equal(endpoint.status, 201, 'an endpoint is created');

  const created = await Promise.all(Array.from({ length: 12 }, () => api('POST', '/v1/leads', leadBody())));
  t.same(
    created.map((c) => c.status),
    Array.from({ length: 12 }, () => 201),
    'twelve leads created at once',
  );
  const ids = created.map((c) => String(c.body.id));
  const updated = await Promise.all(
    ids.slice(0, 4).map((id) => api('PATCH', `/v1/leads/${id}`, { temperature: 'hot' })),
  );
  t.same(
    updated.map((u) => [u.status, u.body.temperature]),
    Array.from({ length: 4 }, () => [200, 'hot']),
    'four updated',
  );
  const fetched = await api('GET', `/v1/leads/${ids[0]}`);
  t.match(fetched, { status: 200, body: { id: ids[0], temperature: 'hot' } }, 'a lead reads back as updated');

  const synced: Record<string, unknown>[] = [];
  let cursor: string | null = null;
  do {
    const query = new URLSearchParams({ limit: '5', ...(cursor ? { cursor } : {}) });
    const page = await api('GET', `/v1/leads?${query}`);
    t.equal(page.status, 200, 'a sync page');
    synced.push(...(page.body.data as Record<string, unknown>[]));
    cursor = page.body.next_cursor as string | null;
  } while (cursor);
  t.same(new Set(synced.map((l) => l.id)), new Set(ids), 'the sync walks every lead once');

  const application = await cli<{ id: string; lead_id: string }>(
    'application',
    'convert',
    definition.slug,
    ids[1]!,
    '--as',
    STAFF,
  );
  t.equal(application.lead_id, ids[1], 'the CLI converts a lead into an application');
  const status = await api('GET', `/v1/applications/${application.id}/status`);
  t.equal(status.status, 200, "the API reads the application's status");

  const webhook = new Webhook(String(endpoint.body.secret));
  const bodies = await waitFor(() => {
    const types = receiver.requests.map((r) => (JSON.parse(r.body) as { event: string }).event);
    return types.filter((type) => type === 'lead.created').length === 12 &&
      types.filter((type) => type === 'lead.updated').length === 4
      ? receiver.requests
      : undefined;
  }, 'every lead.created and lead.updated delivered');
  for (const request of bodies)
    webhook.verify(request.body, {
      'webhook-id': String(request.headers['webhook-id']),
      'webhook-timestamp': String(request.headers['webhook-timestamp']),
      'webhook-signature': String(request.headers['webhook-signature']),
    });
  t.pass('each delivery carries a valid signature');
  const attempts = await direct.query<{ n: number }>(
    "SELECT count(*)::int AS n FROM webhook_deliveries WHERE status = 'succeeded' AND attempts = 1",
  );
  t.equal(attempts.rows[0]!.n, 16, 'each delivery recorded as delivered at the first attempt');

  const [audit] = await cli<{ workspace: string; events: number; broken: unknown }[]>(
    'audit',
    'verify',
    definition.slug,
  );
  t.match(audit, { workspace: definition.slug, broken: null }, 'the CLI verifies the hash chains in one snapshot');
  t.ok(audit!.events >= 16, 'reading every event');

  t.equal((await api('GET', '/v1/leads')).status, 200, 'the key works and is cached');
  await cli('key', 'revoke', definition.slug, key.id);
  await waitFor(async () => (await api('GET', '/v1/leads')).status === 401, 'the revocation to reach the service');
  t.pass("the CLI's revocation reaches the service's cached key");

  service.child.kill('SIGTERM');
  t.equal(await service.exited, 0, 'the service stops cleanly');
});
