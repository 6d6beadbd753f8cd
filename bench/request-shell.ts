/**
 * What the request path costs around a route's own work (npx tsx bench/request-shell.ts).
 *
 * GET /v1/meta/fields answers from the authenticated workspace alone, so once the key is cached a request is the
 * shell of every API request: routing, hooks, authentication and rate limits, validation, the answer's serialisation,
 * counting and logging, and no database. fastify's inject runs it without sockets (the HTTP write is left out, it is
 * the same whatever the service does), 20,000 times after 5,000 unmeasured, with logging off and at `info` to
 * /dev/null through a synchronous destination as in production. Prints this process's CPU per request.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { pino } from 'pino';
import { createServices } from '../src/bootstrap.js';
import { loadConfig } from '../src/config.js';
import { buildApp, loggerOptions } from '../src/http/app.js';
import { createKey } from '../src/keys/repository.js';
import { SCOPES } from '../src/shared/enums.js';
import { validateDefinition } from '../src/workspaces/definition.js';
import { applyDefinition } from '../src/workspaces/repository.js';
import { benchDatabase } from './support.js';

const db = await benchDatabase(4);
const config = {
  ...loadConfig({
    DATABASE_URL: db.url,
    SECRET_ENCRYPTION_KEY: Buffer.alloc(32, 9).toString('base64'),
    LOG_LEVEL: 'info',
  }),
  runWorkers: false,
};
const services = await createServices(config, {
  pool: db.pool,
  url: db.url,
  kind: 'external',
  close: async () => undefined,
});
const demo = JSON.parse(readFileSync(new URL('../definitions/demo-workspace.json', import.meta.url), 'utf8'));
const big = { capacity: 10_000_000, refill_per_second: 1_000_000 };
const def = validateDefinition({
  ...demo,
  slug: `ab-${randomBytes(3).toString('hex')}`,
  plan: 'enterprise',
  limits: { monthly_leads: null, rate: { key: big, scopes: Object.fromEntries(SCOPES.map((s) => [s, big])) } },
});
const { workspace } = await applyDefinition(db.pool, def, services.secretBox);
const key = await createKey(db.pool, {
  tenantId: workspace.id,
  name: 'ab',
  kind: 'secret',
  mode: 'live',
  scopes: [...SCOPES],
});
const out: string[] = [];
for (const log of ['silent', 'info']) {
  const app = await buildApp(services, {
    logger: log === 'silent' ? false : loggerOptions('info', pino.destination({ dest: '/dev/null', sync: true })),
  });
  await app.ready();
  const headers = { authorization: `Bearer ${key.value}` };
  const run = async (n: number) => {
    for (let i = 0; i < n; i++) {
      const r = await app.inject({ method: 'GET', url: '/v1/meta/fields', headers });
      if (r.statusCode !== 200) throw new Error(String(r.statusCode));
    }
  };
  await run(5000);
  const c0 = process.cpuUsage();
  await run(20000);
  const c = process.cpuUsage(c0);
  out.push(`${log} ${((c.user + c.system) / 20000).toFixed(1)} µs`);
  await app.close();
}
console.log(`CPU per GET /v1/meta/fields (inject): ${out.join(', ')}`);
await services.rateLimits.close();
await db.close();
