import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { findKeyByValue } from '../../src/keys/repository.js';
import { hashKey } from '../../src/keys/api-key.js';
import { demoDefinition } from '../support/app.js';
import { runCli, runCliJson } from '../support/cli.js';
import { freshDatabase } from '../support/db.js';

t.test('the CLI creates and changes workspaces from definition files and manages keys', async (t) => {
  const { pool, url } = await freshDatabase(t);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'vcrm-cli-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const def = demoDefinition();
  const file = path.join(dir, 'workspace.json');
  fs.writeFileSync(file, JSON.stringify(def));

  const created = await runCliJson<{ id: string; slug: string; created: boolean; revision: number }>(url, [
    'workspace',
    'apply',
    file,
  ]);
  t.match(created, { slug: def.slug, created: true, revision: 1 });

  fs.writeFileSync(
    file,
    JSON.stringify({ ...def, name: 'Renamed', branches: [...def.branches, { code: 'MUM', name: 'Mumbai' }] }),
  );
  const updated = await runCliJson<{ id: string; created: boolean; revision: number }>(url, [
    'workspace',
    'apply',
    file,
  ]);
  t.match(updated, { id: created.id, created: false, revision: 2 }, 'applying again updates the same workspace');
  const stored = (await pool.query('SELECT name, settings FROM workspaces WHERE id = $1', [created.id])).rows[0];
  t.equal(stored.name, 'Renamed');
  t.equal(stored.settings.branches.length, 3);

  fs.writeFileSync(file, JSON.stringify({ ...def, plan: 'gold', users: [] }));
  const invalid = await runCli(url, ['workspace', 'apply', file]);
  t.equal(invalid.code, 2, 'an invalid definition exits 2');
  t.match(invalid.stderr, /plan/, 'and names each problem');

  const secret = await runCliJson<{ id: string; key: string; scopes: string[] }>(url, [
    'key',
    'create',
    def.slug,
    '--mode',
    'test',
    '--scopes',
    'leads:read,leads:create',
  ]);
  t.match(secret.key, /^key_test_[A-Za-z0-9]{32}$/, 'secret test key form');
  t.same(secret.scopes.sort(), ['leads:create', 'leads:read']);
  const pub = await runCliJson<{ key: string; allowed_origins: string[] }>(url, [
    'key',
    'create',
    def.slug,
    '--type',
    'public',
    '--origins',
    'https://www.example.com/path',
  ]);
  t.match(pub.key, /^key_live_pub_[A-Za-z0-9]{32}$/, 'public live key form');
  t.same(pub.allowed_origins, ['https://www.example.com'], 'origins are normalised');

  const refused = await runCli(url, [
    'key',
    'create',
    def.slug,
    '--type',
    'public',
    '--scopes',
    'leads:read',
    '--origins',
    'https://a.example',
  ]);
  t.equal(refused.code, 2);
  t.match(refused.stderr, /Public keys can only have the scope leads:create/);

  const row = (await pool.query('SELECT hash, last4 FROM api_keys WHERE id = $1', [secret.id])).rows[0];
  t.same(row.hash, hashKey(secret.key), 'only the hash of the key is stored');
  const everything = JSON.stringify((await pool.query('SELECT * FROM api_keys')).rows);
  t.notOk(everything.includes(secret.key), 'the full key is stored nowhere');

  const listed = await runCliJson<Array<{ id: string; last4: string }>>(url, ['key', 'list', def.slug]);
  t.equal(listed.length, 2);
  t.notOk(JSON.stringify(listed).includes(secret.key), 'listing never shows a full key');

  await runCliJson(url, ['key', 'revoke', def.slug, secret.id]);
  t.ok((await findKeyByValue(pool, secret.key))?.revoked_at, 'revoked');

  const suspended = await runCliJson<{ status: string }>(url, ['workspace', 'suspend', def.slug]);
  t.equal(suspended.status, 'suspended');
  const active = await runCliJson<{ status: string }>(url, ['workspace', 'reactivate', created.id]);
  t.equal(active.status, 'active');
});
