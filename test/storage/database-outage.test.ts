import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import t from 'tap';
import { loggerOptions } from '../../src/http/logging.js';
import { freePort, startEmbeddedPostgres, type EmbeddedServer } from '../../src/storage/embedded-postgres.js';
import { migrate } from '../../src/storage/migrate.js';
import { createPool } from '../../src/storage/postgres.js';
import { seedWorkspace, startApp } from '../support/app.js';
import { leadBody } from '../leads/helpers.js';

// An operator restarts the service's PostgreSQL (a server of this test's own) while 8 clients create leads. While it
// is down every answer is a 503 with Retry-After in the Error shape, never a 500; the outage is logged once at its
// start and once at its end; creation works again after; every lead acknowledged with a 201 is in the database.

const CLIENTS = 8;
const DOWN_MS = 3000;

interface Tally {
  created: string[];
  unavailable: number;
  withoutRetryAfter: number;
  other: Map<number, number>;
}

t.test('a PostgreSQL restart under load answers 503 with Retry-After, never 500, and loses nothing', async (t) => {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'vcrm-outage-'));
  chmodSync(dataDir, 0o755);
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  // The restarted server must come back where the pool looks for it.
  const previousPort = process.env.EMBEDDED_PG_PORT;
  process.env.EMBEDDED_PG_PORT = String(await freePort());
  t.teardown(() => {
    if (previousPort === undefined) delete process.env.EMBEDDED_PG_PORT;
    else process.env.EMBEDDED_PG_PORT = previousPort;
  });
  let server: EmbeddedServer = await startEmbeddedPostgres(dataDir);
  t.teardown(() => server.stop());
  const pool = createPool(server.url, 10, 2000);
  await migrate(pool);
  t.teardown(() => pool.end());

  const logLines: Record<string, unknown>[] = [];
  const log = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) logLines.push(JSON.parse(line));
      done();
    },
  });
  const api = await startApp(t, { database: { pool, url: server.url }, logger: loggerOptions('info', log) });
  const ws = await seedWorkspace(api, {
    limits: {
      monthly_leads: null,
      rate: {
        key: { capacity: 1_000_000, refill_per_second: 100_000 },
        scopes: { 'leads:create': { capacity: 1_000_000, refill_per_second: 100_000 } },
      },
    },
  });

  const tally: Tally = { created: [], unavailable: 0, withoutRetryAfter: 0, other: new Map() };
  let running = true;
  const client = async () => {
    while (running) {
      const response = await api.request('/v1/leads', { method: 'POST', key: ws.live, json: leadBody() });
      const body = (await response.json()) as { id?: string; error?: string; request_id?: string };
      if (response.status === 201) tally.created.push(body.id!);
      else if (response.status === 503 && body.error === 'service_unavailable' && body.request_id) {
        tally.unavailable++;
        if (!response.headers.get('retry-after')) tally.withoutRetryAfter++;
        // What a client does with the answer: waits a little (not the full interval, to keep the test short).
        await new Promise((r) => setTimeout(r, 50));
      } else tally.other.set(response.status, (tally.other.get(response.status) ?? 0) + 1);
    }
  };
  const clients = Array.from({ length: CLIENTS }, client);

  await new Promise((r) => setTimeout(r, 1000));
  await server.stop();
  // Requests in flight when the stop began may still have committed: count from the moment it is down.
  const createdBefore = tally.created.length;
  await new Promise((r) => setTimeout(r, DOWN_MS));
  const unavailableWhileDown = tally.unavailable;
  const createdWhileDown = tally.created.length - createdBefore;
  server = await startEmbeddedPostgres(dataDir);
  const back = Date.now();
  let firstCreatedAfter: number | undefined;
  const createdAtRestart = tally.created.length;
  while (Date.now() - back < 5000 && firstCreatedAfter === undefined) {
    if (tally.created.length > createdAtRestart) firstCreatedAfter = Date.now() - back;
    await new Promise((r) => setTimeout(r, 20));
  }
  await new Promise((r) => setTimeout(r, 1000));
  running = false;
  await Promise.all(clients);

  t.ok(createdBefore > 0, `leads were created before the restart (${createdBefore})`);
  t.equal(createdWhileDown, 0, 'none was acknowledged while the server was down');
  t.ok(unavailableWhileDown > 0, `requests made while it was down were answered 503 (${unavailableWhileDown})`);
  t.equal(tally.withoutRetryAfter, 0, 'every 503 carries Retry-After');
  t.same(Object.fromEntries(tally.other), {}, 'no other answer (no 500) before, during or after', {
    unhandled: logLines.filter((l) => l.msg === 'unhandled error').map((l) => l.err),
  });
  t.ok(firstCreatedAfter !== undefined, `creation works again once the server is back (${firstCreatedAfter} ms)`);

  const stored = await pool.query<{ id: string }>('SELECT id FROM leads WHERE id = ANY($1::uuid[])', [tally.created]);
  t.equal(stored.rowCount, tally.created.length, `every acknowledged lead is stored (${tally.created.length})`);

  const starts = logLines.filter(
    (l) => l.msg === 'the database cannot be reached: answering 503 until a connection is made',
  );
  const ends = logLines.filter((l) => l.msg === 'the database can be reached again');
  t.equal(starts.length, 1, 'the outage is logged once at its start, not once per request');
  t.equal(ends.length, 1, 'and once at its end');
  t.ok(Number(ends[0]?.failures) >= unavailableWhileDown, 'its end counts the requests refused meanwhile');
});
