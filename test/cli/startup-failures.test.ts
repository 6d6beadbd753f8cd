import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { runCli } from '../support/cli.js';
import { freshDatabase } from '../support/db.js';
import { pgbouncerSkipReason, startPgBouncer } from '../support/pgbouncer.js';
import { appFixture } from '../applications/support.js';

// The start-up failures a newcomer meets first, each answered by one sentence naming the setting to change, never
// "visa-crm failed for a reason it does not recognise".

const UNRECOGNISED = /does not recognise/;

const skip = pgbouncerSkipReason();

t.test('DATABASE_URL on a transaction pooler without DATABASE_DIRECT_URL names both settings', { skip }, async (t) => {
  const f = await appFixture(t);
  const direct = new URL(f.app.services.config.databaseUrl!);
  // One server session behind the pooler: whatever one client prepared there, the next meets.
  const bouncer = await startPgBouncer(t, { poolSize: 1 });
  const pooled = bouncer.url(direct.pathname.slice(1));
  const convert = (leadId: string) =>
    runCli(pooled, ['application', 'convert', f.ws.workspace.slug, leadId, '--as', 'vikram@northstar.example'], {
      RUN_WORKERS: 'false',
    });
  const results = [await convert(await f.lead()), await convert(await f.lead())];
  const failed = results.filter((r) => r.code !== 0);
  t.ok(failed.length > 0, 'the pooler refused a prepared statement of the command');
  for (const result of failed) {
    t.equal(result.code, 1);
    t.match(result.stderr, /^DATABASE_URL names a connection pooler in transaction mode/, 'the sentence');
    t.match(result.stderr, /Set DATABASE_DIRECT_URL to the PostgreSQL server itself/, 'and the setting to add');
    t.notMatch(result.stderr, UNRECOGNISED);
  }
  const fixed = await runCli(
    pooled,
    ['application', 'convert', f.ws.workspace.slug, await f.lead(), '--as', 'vikram@northstar.example'],
    { RUN_WORKERS: 'false', DATABASE_DIRECT_URL: direct.toString() },
  );
  t.equal(fixed.code, 0, `with DATABASE_DIRECT_URL set the command works: ${fixed.stderr}`);
});

t.test('a missing SECRET_ENCRYPTION_KEY next to DATABASE_URL names it and how to make one', async (t) => {
  const { url } = await freshDatabase(t);
  const result = await runCli(url, ['workspace', 'list'], { SECRET_ENCRYPTION_KEY: '' });
  t.equal(result.code, 1);
  t.equal(
    result.stderr,
    'SECRET_ENCRYPTION_KEY is required when DATABASE_URL is set (generate one with: openssl rand -base64 32)\n',
  );
});

t.test('a port in use names the address and PORT', async (t) => {
  const { url } = await freshDatabase(t);
  const holder = net.createServer();
  await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
  t.teardown(() => holder.close());
  const port = (holder.address() as net.AddressInfo).port;
  const result = await runCli(url, ['serve'], { PORT: String(port), HOST: '127.0.0.1', RUN_WORKERS: 'false' });
  t.equal(result.code, 1);
  t.equal(
    result.stderr,
    `Cannot listen on 127.0.0.1:${port}: another program already does. Stop it, or set PORT to a free port ` +
      '(HOST chooses the address).\n',
  );
});

t.test('a data folder another instance holds names the instance and DATA_DIR', async (t) => {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'vcrm-held-'));
  chmodSync(dataDir, 0o755); // as root, the embedded server's user must be able to enter it
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  // Held by this test process, alive: what a running `visa-crm serve` writes when it takes the folder.
  writeFileSync(
    path.join(dataDir, 'instance.lock'),
    JSON.stringify({ pid: process.pid, port: 0, startedAt: new Date().toISOString() }),
  );
  const result = await runCli('', ['serve'], { DATABASE_URL: '', DATA_DIR: dataDir, PORT: '0', RUN_WORKERS: 'false' });
  t.equal(result.code, 1);
  t.equal(
    result.stderr,
    `The data folder ${dataDir} is held by another running instance (pid ${process.pid}). Stop it, or point ` +
      'DATA_DIR at another folder.\n',
  );
});
