/**
 * What the request path costs around a route's own work (node --import ./scripts/typescript-resolve.mjs
 * bench/request-shell.ts).
 *
 * GET /v1/meta/fields answers from the authenticated workspace alone, so once the key is cached a request is the
 * shell of every API request: routing, hooks, authentication and rate limits, validation, the answer's serialisation,
 * counting and logging, and no database. fastify's inject runs it without sockets (the HTTP write is left out, it is
 * the same whatever the service does), 20,000 times after 5,000 unmeasured, with logging off and at `info` to
 * /dev/null through a synchronous destination as in production. Prints this process's CPU per request.
 */
import { pino } from 'pino';
import { buildApp, loggerOptions } from '../src/http/app.js';
import { benchDatabase, benchServices, unlimitedWorkspace } from './support.js';

const db = await benchDatabase(4);
const services = await benchServices(db, 'info');
const { key } = await unlimitedWorkspace(services, 'ab', 'ab');
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
