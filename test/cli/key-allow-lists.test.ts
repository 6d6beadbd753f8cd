import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { demoDefinition } from '../support/app.js';
import { runCli, runCliJson } from '../support/cli.js';
import { freshDatabase } from '../support/db.js';

// Each run starts the real tool in a process of its own: slow on a loaded machine.
t.setTimeout(300_000);

t.test('the CLI: key create refuses the same entries with the same words', async (t) => {
  const { url } = await freshDatabase(t);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'vcrm-cli-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const def = demoDefinition();
  const file = path.join(dir, 'workspace.json');
  fs.writeFileSync(file, JSON.stringify(def));
  await runCliJson(url, ['workspace', 'apply', file]);
  const refused = await runCli(url, ['key', 'create', def.slug, '--ips', '10.0.0.300, nonsense']);
  t.equal(refused.code, 2);
  t.match(refused.stderr, /^Not an IP address or range: "10\.0\.0\.300", "nonsense"\./);
  const made = await runCliJson<{ ip_allowlist: string[] }>(url, ['key', 'create', def.slug, '--ips', '10.0.0.0/8']);
  t.same(made.ip_allowlist, ['10.0.0.0/8']);
  const listed = await runCli(url, ['key', 'list', def.slug]);
  t.match(listed.stdout, /ip_allowlist/, 'the list names the allow-list');
  t.match(listed.stdout, /10\.0\.0\.0\/8/, 'and shows it');
});
