import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import t from 'tap';
import { cliArgs, toolEnv } from '../support/cli.js';
import { TEST_ENCRYPTION_KEY } from '../support/app.js';
import { leadBody, leadsFixture } from './helpers.js';

const run = promisify(execFile);

t.test('visa-crm sandbox list shows what a test key submitted', async (t) => {
  const f = await leadsFixture(t);
  const testKey = await f.key({ mode: 'test' });
  const otherTestKey = await f.key({ mode: 'test' });
  const liveKey = await f.key({ mode: 'live' });
  const person = leadBody({ full_name: 'Sandbox Sam' });
  const created = await f.post(person, { key: testKey.value });
  const duplicate = await f.post({ ...person, phone: null }, { key: testKey.value });
  await f.post(leadBody(), { key: otherTestKey.value });
  await f.post(leadBody(), { key: liveKey.value });
  t.equal(duplicate.status, 200);

  const env = {
    ...toolEnv(),
    DATABASE_URL: f.services.config.databaseUrl,
    SECRET_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY,
    LOG_LEVEL: 'silent',
  };
  const cli = (...args: string[]) => run(process.execPath, [...cliArgs(), ...args], { env });
  const { stdout } = await cli('--json', 'sandbox', 'list', f.workspace.slug, '--key', testKey.id);
  const rows = JSON.parse(stdout) as { outcome: string; lead_id: string; full_name: string }[];
  t.same(
    rows.map((r) => [r.outcome, r.lead_id, r.full_name]),
    [
      ['duplicate', created.body.id, 'Sandbox Sam'],
      ['created', created.body.id, 'Sandbox Sam'],
    ],
    "newest first, only this key's submissions",
  );

  const human = await cli('sandbox', 'list', f.workspace.slug, '--key', testKey.id);
  t.match(human.stdout, /received_at\s+outcome\s+lead_id/);
  await t.rejects(
    cli('sandbox', 'list', f.workspace.slug, '--key', liveKey.id),
    /live key/,
    'live keys have no sandbox',
  );

  const timeline = await cli('--json', 'history', 'lead', String(created.body.id));
  t.same(
    (JSON.parse(timeline.stdout) as { type: string }[]).map((e) => e.type),
    ['lead.created', 'lead.enquiry_received'],
    'the timeline of a sandbox lead',
  );
});
