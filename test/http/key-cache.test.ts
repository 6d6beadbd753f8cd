import t from 'tap';
import { KeyLookupCache } from '../../src/keys/key-cache.js';
import { seedWorkspace, startApp } from '../support/app.js';
import { runCliJson } from '../support/cli.js';

async function statusWithin(request: () => Promise<Response>, wanted: number, tries = 100): Promise<number> {
  let status = 0;
  for (let i = 0; i < tries; i++) {
    status = (await request()).status;
    if (status === wanted) return status;
    await new Promise((r) => setTimeout(r, 100));
  }
  return status;
}

t.test('a revocation or suspension made by another process reaches the cached keys through NOTIFY', async (t) => {
  const api = await startApp(t);
  // A cache that would keep entries for ten minutes: only the notification can clear it.
  const keys = new KeyLookupCache(600_000);
  api.services.keys = keys;
  const url = (api.pool as unknown as { options: { connectionString: string } }).options.connectionString;
  await keys.listen(url);
  t.teardown(() => keys.close());
  const ws = await seedWorkspace(api);
  const key = await ws.key({});
  const get = () => api.request('/v1/leads', { key: key.value });
  t.equal((await get()).status, 200, 'the key works and is now cached');

  await runCliJson(url, ['workspace', 'suspend', ws.workspace.slug]);
  t.equal(await statusWithin(get, 402), 402, 'the suspension by the CLI process applies to the cached key');
  await runCliJson(url, ['workspace', 'reactivate', ws.workspace.slug]);
  t.equal(await statusWithin(get, 200), 200, 'and so does the reactivation');
  await runCliJson(url, ['key', 'revoke', ws.workspace.slug, key.id]);
  t.equal(await statusWithin(get, 401), 401, 'the revocation by the CLI process applies to the cached key');
});
