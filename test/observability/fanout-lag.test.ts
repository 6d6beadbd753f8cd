import t from 'tap';
import pg from 'pg';
import { fanOutBatch } from '../../src/subscribers/webhook-fanout.js';
import { watchFanOutLag, type BlockingBackend } from '../../src/subscribers/fanout-lag.js';
import { seedWorkspace, startApp } from '../support/app.js';
import { freshDatabase } from '../support/db.js';
import { parsePrometheus, sampleValue } from '../support/prometheus.js';

const METRICS_TOKEN = 'metrics-token-for-tests-0123456789';

t.test(
  'a write transaction open in another database holds the fan-out back: warned with its pid, and in /metrics',
  async (t) => {
    const api = await startApp(t, { config: { metricsToken: METRICS_TOKEN } });
    const ws = await seedWorkspace(api);
    const other = await freshDatabase(t);
    const blocker = new pg.Client({ connectionString: other.url });
    await blocker.connect();
    t.teardown(() => blocker.end());
    await blocker.query('CREATE TABLE held (n int)');
    await blocker.query('BEGIN');
    await blocker.query('INSERT INTO held VALUES (1)');
    const blockerPid = (await blocker.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;

    const created = await api.request('/v1/leads', {
      key: ws.live,
      method: 'POST',
      json: { full_name: 'Held Back', email: 'held@example.com', consent: true },
    });
    t.equal(created.status, 201);
    const batch = await fanOutBatch(api.pool, api.services.personalData, new Date());
    t.equal(batch.events, 0, 'the fan-out reads nothing past the open transaction');

    const warnings: { fields: Record<string, unknown>; message: string }[] = [];
    const log = {
      warn: (fields: Record<string, unknown>, message: string) => warnings.push({ fields, message }),
      error: (fields: Record<string, unknown>) => t.fail(`lag check failed: ${String(fields.err)}`),
    };
    const watch = watchFanOutLag(api.pool, () => new Date(), log as never, { warnAfterSeconds: 0, intervalMs: 50 });
    // The warning names the oldest transaction holding the fan-out back: another suite's, in another database, can
    // be older for a moment (a CI run once named one), so this waits, bounded, for a warning that names the blocker.
    const blockingOf = (w: { fields: Record<string, unknown> }) => w.fields.blocking_backend as BlockingBackend;
    const namingBlocker = () => warnings.find((w) => blockingOf(w).pid === blockerPid);
    for (let i = 0; i < 200 && !namingBlocker(); i++) await new Promise((resolve) => setTimeout(resolve, 50));
    await watch.stop();
    t.ok(warnings.length > 0, 'a warning is logged');
    const warning = namingBlocker() ?? warnings[0]!;
    const blocking = blockingOf(warning);
    t.equal(blocking.pid, blockerPid, 'the warning names the blocking backend');
    t.equal(blocking.database, new URL(other.url).pathname.slice(1));
    t.equal(blocking.state, 'idle in transaction');
    t.type(blocking.transaction_age_seconds, 'number');
    t.notOk('query' in blocking, 'never the query text');
    t.ok((warning.fields.lag_events as number) >= 1);

    const scrape = await api.request('/metrics', { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
    const { samples } = parsePrometheus(await scrape.text());
    t.ok(sampleValue(samples, 'webhook_fanout_lag_events')! >= 1, 'the events behind are in /metrics');
    t.ok(sampleValue(samples, 'webhook_fanout_lag_seconds')! > 0, 'and their age');

    await blocker.query('COMMIT');
    // Another suite's transaction, in another database, can hold the fan-out back for a moment after this one ends
    // (a run of 2026-11-28 saw one): the fan-out runs again, bounded, until the lag reads 0.
    const scrapeLag = async () =>
      parsePrometheus(
        await (await api.request('/metrics', { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).text(),
      ).samples;
    let after = await scrapeLag();
    for (let i = 0; i < 100 && sampleValue(after, 'webhook_fanout_lag_events') !== 0; i++) {
      while ((await fanOutBatch(api.pool, api.services.personalData, new Date())).events > 0);
      after = await scrapeLag();
      if (sampleValue(after, 'webhook_fanout_lag_events') !== 0) await new Promise((r) => setTimeout(r, 50));
    }
    t.equal(sampleValue(after, 'webhook_fanout_lag_events'), 0, 'caught up once the transaction ends');
    t.equal(sampleValue(after, 'webhook_fanout_lag_seconds'), 0);
  },
);
