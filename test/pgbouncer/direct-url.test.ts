import t from 'tap';
import { loadConfig } from '../../src/config.js';
import { directConnections, openDatabase } from '../../src/storage/database.js';
import { freshDatabase } from '../support/db.js';

t.test('DATABASE_DIRECT_URL defaults to DATABASE_URL and is refused without it', async (t) => {
  const pooler = 'postgres://app@pooler.internal:6432/crm';
  const server = 'postgres://app@db.internal:5432/crm';
  t.equal(loadConfig({ DATABASE_URL: pooler }).databaseDirectUrl, pooler, 'unset: DATABASE_URL');
  t.equal(loadConfig({ DATABASE_URL: pooler, DATABASE_DIRECT_URL: server }).databaseDirectUrl, server, 'set: itself');
  t.equal(loadConfig({}).databaseDirectUrl, undefined, 'neither: the embedded server');
  t.throws(() => loadConfig({ DATABASE_DIRECT_URL: server }), {
    message: /^DATABASE_DIRECT_URL is set without DATABASE_URL/,
  });
});

t.test(
  'the direct connections are a pool of their own only when DATABASE_DIRECT_URL names another address',
  async (t) => {
    const { url } = await freshDatabase(t, undefined, 1);
    const same = await openDatabase(
      { databaseUrl: url, databaseDirectUrl: url, dataDir: '/nonexistent' },
      { poolSize: 2 },
    );
    t.teardown(() => same.close());
    t.equal(directConnections(same).pool, same.pool, 'the same URL: the requests pool');
    // Another spelling of the same server: a second pool, as it would be for a pooler and its server.
    const other = new URL(url);
    other.searchParams.set('application_name', 'direct');
    const split = await openDatabase(
      { databaseUrl: url, databaseDirectUrl: other.toString(), dataDir: '/nonexistent' },
      { poolSize: 2 },
    );
    t.teardown(() => split.close());
    const direct = directConnections(split);
    t.not(direct.pool, split.pool, 'another URL: a pool of its own');
    t.equal(direct.url, other.toString());
    const name = await direct.pool.query<{ name: string }>('SELECT current_setting($1) AS name', ['application_name']);
    t.equal(name.rows[0]!.name, 'direct', 'reaching the server DATABASE_DIRECT_URL names');
  },
);
