import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { describeFailure } from '../../src/cli/errors.js';
import { buildProgram } from '../../src/cli/program.js';
import { demoDefinition } from '../support/app.js';
import { runCli, runCliJson } from '../support/cli.js';
import { freshDatabase } from '../support/db.js';

const MALFORMED = 'not-a-uuid';

t.test('a malformed id on every command taking one is refused with a sentence, never a driver message', async (t) => {
  const { url } = await freshDatabase(t);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'vcrm-cli-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const def = demoDefinition();
  const file = path.join(dir, 'workspace.json');
  fs.writeFileSync(file, JSON.stringify(def));
  await runCliJson(url, ['workspace', 'apply', file]);
  const as = ['--as', def.users[0]!.email];
  const endpoint = '0b6f3c5e-8a1d-4c2b-9e7f-1a2b3c4d5e6f';

  const cases: Array<[string, string[]]> = [
    ['key', ['key', 'revoke', def.slug, MALFORMED]],
    ['key', ['sandbox', 'list', def.slug, '--key', MALFORMED]],
    ['lead', ['application', 'convert', def.slug, MALFORMED, ...as]],
    ['application', ['application', 'show', def.slug, MALFORMED]],
    ['application', ['application', 'module-state', def.slug, MALFORMED, 'passport', 'done', ...as]],
    ['application', ['application', 'module-select', def.slug, MALFORMED, 'passport', ...as]],
    ['application', ['application', 'module-deselect', def.slug, MALFORMED, 'passport', ...as]],
    ['application', ['application', 'module-restore', def.slug, MALFORMED, 'passport', ...as]],
    ['application', ['application', 'module-add', def.slug, MALFORMED, 'Visa photo', ...as]],
    ['application', ['application', 'module-save', def.slug, MALFORMED, 'passport', ...as]],
    ['application', ['application', 'move', def.slug, MALFORMED, 'intake', ...as]],
    ['application', ['application', 'status', def.slug, MALFORMED, 'on_hold', ...as]],
    ['application', ['application', 'outcome', def.slug, MALFORMED, 'approved', ...as]],
    ['lead', ['history', 'lead', MALFORMED]],
    ['application', ['history', 'application', MALFORMED]],
    ['webhook endpoint', ['webhook', 'deliveries', def.slug, MALFORMED]],
    ['delivery', ['webhook', 'deliveries', def.slug, endpoint, '--cursor', MALFORMED]],
    ['webhook endpoint', ['webhook', 'resend', def.slug, MALFORMED, endpoint, ...as]],
    ['delivery', ['webhook', 'resend', def.slug, endpoint, MALFORMED, ...as]],
    ['webhook endpoint', ['webhook', 'resume', def.slug, MALFORMED, ...as]],
    ['webhook endpoint', ['webhook', 'rotate-secret', def.slug, MALFORMED, ...as]],
    ['webhook endpoint', ['webhook', 'test', def.slug, MALFORMED, ...as]],
  ];
  const sentence = (what: string) =>
    `"${MALFORMED}" is not a ${what} id: ids are UUIDs such as 0b6f3c5e-8a1d-4c2b-9e7f-1a2b3c4d5e6f.`;
  // In this process (a Node start per command is slow on a shared machine): the program main.ts parses with.
  for (const [what, args] of cases) {
    const name = args.slice(0, 2).join(' ');
    const failed = await buildProgram()
      .parseAsync(['node', 'visa-crm', ...args])
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    t.same(describeFailure(failed), { message: sentence(what), exitCode: 2 }, `${name}: refused with the sentence`);
  }

  // And once through the real executable: the sentence alone on stderr, nothing on stdout, exit code 2.
  const revoke = await runCli(url, ['key', 'revoke', def.slug, MALFORMED]);
  t.same(revoke, { code: 2, stdout: '', stderr: `${sentence('key')}\n` }, 'key revoke as the user runs it');
});
