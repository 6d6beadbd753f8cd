import { randomUUID } from 'node:crypto';
import t from 'tap';
import { runCli } from '../support/cli.js';
import { seedWorkspace, startApp } from '../support/app.js';
import { everyRole, memberOf } from './support.js';

t.test('the real CLI checks --as against the permission table before it acts', async (t) => {
  const app = await startApp(t);
  const ws = await seedWorkspace(app, everyRole());
  const url = app.services.config.databaseUrl!;
  const erase = (role: string) =>
    runCli(url, ['lead', 'erase', ws.workspace.slug, randomUUID(), '--as', memberOf(role as never)]);
  const refused = await erase('counsellor');
  t.equal(refused.code, 2);
  t.match(
    refused.stderr,
    /counsellor@northstar\.example is a counsellor .* does not let a counsellor do this: erase a person/,
  );
  const allowed = await erase('admin');
  t.notMatch(allowed.stderr, /permission table/, 'an admin passes the table (and then finds no such lead)');
  const resume = await runCli(url, [
    'task',
    'create',
    ws.workspace.slug,
    '--lead',
    randomUUID(),
    '--title',
    'x',
    '--due',
    '2027-01-01T00:00:00Z',
    '--as',
    memberOf('viewer'),
  ]);
  t.match(resume.stderr, /viewer .* does not let a viewer do this/);
});
