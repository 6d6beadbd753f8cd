import { Type } from 'typebox';
import t from 'tap';
import { loadConfig } from '../../src/config.js';
import { startService } from '../../src/main.js';
import { compileEverySchema } from '../../src/http/schema-compilation.js';
import { startApp, TEST_ENCRYPTION_KEY } from '../support/app.js';
import { freshDatabase } from '../support/db.js';

// Route schemas compile on first use in an app the tests build, and all of them before the service listens.

t.test('a route compiles its schemas at its first request; the rest wait', async (t) => {
  const untouched = await startApp(t);
  const all = await compileEverySchema(untouched.app);
  t.ok(all > 100, `every API and console route's validators and serializers were pending (${all})`);
  t.equal(await compileEverySchema(untouched.app), 0, 'and once compiled, nothing is left');

  const used = await startApp(t);
  const refused = await used.request('/v1/leads', { method: 'POST', key: 'sk_test_unknown', json: {} });
  t.equal(refused.status, 401, 'a request reaches a route');
  t.ok(((await refused.json()) as { error?: unknown }).error, 'and its refusal is serialized in the Error shape');
  const left = await compileEverySchema(used.app);
  t.ok(left < all, `the routes it reached compiled then (${all - left} of ${all})`);
});

t.test('a schema that cannot compile stops compileEverySchema', async (t) => {
  const { app } = await startApp(t, {
    beforeListen: (app) => {
      app.post('/broken', { schema: { body: Type.Unsafe({ type: 'no such type' }) } }, async () => ({}));
    },
  });
  await t.rejects(compileEverySchema(app), /type/, 'the compilation error, not a 500 at the first request');
});

t.test('the service compiles every schema before it listens', async (t) => {
  const { url } = await freshDatabase(t);
  const running = await startService({
    ...loadConfig({ DATABASE_URL: url, SECRET_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY, LOG_LEVEL: 'silent' }),
    host: '127.0.0.1',
    port: 0,
    runWorkers: false,
  });
  t.teardown(() => running.stop('test'));
  t.equal(await compileEverySchema(running.app), 0, 'nothing was left to compile once it listened');
});
