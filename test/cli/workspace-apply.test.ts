import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { demoDefinition } from '../support/app.js';
import { runCli, runCliJson } from '../support/cli.js';
import { freshDatabase } from '../support/db.js';

t.test('workspace apply: an unchanged file changes nothing; a broken one lists shape and rule problems', async (t) => {
  const { pool, url } = await freshDatabase(t);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'vcrm-cli-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const def = demoDefinition({
    widget: {
      ...demoDefinition().widget,
      captcha: { provider: 'turnstile', site_key: 'site', secret: 'captcha-secret' },
    },
  });
  const file = path.join(dir, 'workspace.json');
  fs.writeFileSync(file, JSON.stringify(def));
  const created = await runCliJson<{ id: string; revision: number; changed: boolean }>(url, [
    'workspace',
    'apply',
    file,
  ]);
  t.match(created, { revision: 1, changed: true });

  const again = await runCli(url, ['workspace', 'apply', file]);
  t.equal(again.code, 0);
  t.equal(
    again.stdout,
    `Nothing changed: kept workspace ${def.slug} (${created.id}), plan ${def.plan}, revision 1\n`,
    'applying the same file again (its captcha secret included) says nothing changed',
  );
  const stored = (await pool.query('SELECT revision FROM workspaces WHERE id = $1', [created.id])).rows[0];
  t.equal(stored.revision, 1, 'and keeps the revision');

  fs.writeFileSync(
    file,
    JSON.stringify({ ...def, plan: 'gold', users: [], branches: [def.branches[0], def.branches[0]] }),
  );
  const invalid = await runCli(url, ['workspace', 'apply', file]);
  t.equal(invalid.code, 2, 'an invalid definition exits 2');
  t.match(
    invalid.stderr,
    /plan: must be equal to one of the allowed values: starter, growth, enterprise/,
    'an enum problem lists the allowed values',
  );
  t.match(invalid.stderr, /branches: code \S+ appears more than once/, 'rule problems come with shape problems');
  t.match(invalid.stderr, /users: at least one active owner is needed/, 'every rule problem');
});
