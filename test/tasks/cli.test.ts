import t from 'tap';
import type { Task } from '../../src/domain/tasks/index.js';
import { runCli } from '../support/cli.js';
import { taskFixture } from './support.js';

const AS = ['--as', 'vikram@northstar.example'];

t.test('the CLI creates, changes, completes and reopens tasks, lists them and prints their history', async (t) => {
  // About ten CLI processes, each a Node start: minutes on a loaded machine, beyond the 180 s default.
  t.setTimeout(600_000);
  const f = await taskFixture(t);
  const cli = (...args: string[]) => runCli(f.app.services.config.databaseUrl!, args, { RUN_WORKERS: 'false' });
  const json = async <T>(...args: string[]): Promise<T> => {
    const result = await cli('--json', ...args);
    t.equal(result.code, 0, `${args.slice(0, 2).join(' ')}: ${result.stderr}`);
    return JSON.parse(result.stdout) as T;
  };
  const slug = f.ws.workspace.slug;
  const leadId = await f.lead();
  const due = new Date(Date.now() + 3_600_000).toISOString();

  const task = await json<Task>(
    'task',
    'create',
    slug,
    '--lead',
    leadId,
    '--title',
    'Collect IELTS scores',
    '--due',
    due,
    '--assignee',
    'meera@northstar.example',
    ...AS,
  );
  t.match(task, {
    lead_id: leadId,
    title: 'Collect IELTS scores',
    due_at: due,
    status: 'open',
    assignee: { email: 'meera@northstar.example' },
  });

  const later = new Date(Date.now() + 7_200_000).toISOString();
  t.match(await json<Task>('task', 'change', slug, task.id, '--due', later, '--unassign', ...AS), {
    due_at: later,
    assignee: null,
  });
  t.match(await json<Task>('task', 'complete', slug, task.id, ...AS), { status: 'completed' });
  t.match(await json<Task>('task', 'reopen', slug, task.id, ...AS), { status: 'open', completed_at: null });
  t.same(
    await json<Task>('task', 'show', slug, task.id),
    (await (await f.admin(`/tasks/${task.id}`)).json()) as Task,
    'the CLI and the admin interface show the same task',
  );
  const listed = await json<{ data: Task[] }>('task', 'list', slug, '--lead', leadId);
  t.same(
    listed.data.map((x) => x.id),
    [task.id],
  );

  const human = await cli('task', 'list', slug);
  t.match(human.stdout, /Collect IELTS scores/);

  const refused = await cli(
    'task',
    'create',
    slug,
    '--lead',
    leadId,
    '--application',
    leadId,
    '--title',
    'x',
    '--due',
    due,
    ...AS,
  );
  t.equal(refused.code, 2);
  t.match(refused.stderr, /exactly one of --lead and --application/);
  const unknown = await cli('task', 'complete', slug, '00000000-0000-4000-8000-000000000000', ...AS);
  t.equal(unknown.code, 2);
  t.match(unknown.stderr, /No task with this id in this workspace and mode/);

  const history = await cli('history', 'task', task.id);
  t.equal(history.code, 0, history.stderr);
  const lines = history.stdout.split('\n').filter((l) => / #\d+ {2}task\./.test(l));
  t.same(
    lines.map((l) => l.split(/\s+/)[2]),
    ['task.created', 'task.changed', 'task.completed', 'task.reopened'],
    'every event in order',
  );
  t.match(history.stdout, /by Vikram Singh <vikram@northstar.example>/);
  t.match(history.stdout, /Created "Collect IELTS scores" for lead/);
});
