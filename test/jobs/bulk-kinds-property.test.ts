import fc from 'fast-check';
import t, { type Test } from 'tap';
import { APPLICATION_BULK_KINDS, TASK_BULK_KINDS } from '../../src/commands/bulk/application-actions.js';
import { handleApplicationCommand } from '../../src/commands/applications/application-commands.js';
import { convertLeadToApplication } from '../../src/commands/applications/convert-lead.js';
import { isCommandError } from '../../src/commands/errors.js';
import { staffContext } from '../../src/commands/run-command.js';
import { createTask, handleTaskCommand, resolveAssignee } from '../../src/commands/tasks/task-commands.js';
import { Refusal } from '../../src/domain/refusal.js';
import { createJob, type ItemOutcomeKind } from '../../src/jobs/jobs.js';
import type { Workspace } from '../../src/workspaces/workspace.js';
import type { TestApp } from '../support/app.js';
import { checkProperty } from '../support/properties.js';
import { seedWorkspace, startApp } from '../support/app.js';
import { everyRole, memberOf } from '../identity/support.js';
import { memberActor, seedJobLeads, workJobsWithHolds } from './support.js';

/*
 * The lead bulk property of serial-property.test.ts for the other bulk kinds: random bulk jobs (tasks assigned to a
 * member, cases moved to a stage) over random selections, with single edits of the same records committed while a
 * job is held before one of its items. Every record must end as if the jobs and the edits had run one at a time in
 * that order (a model applies them so): the same outcome for each item, the same final record, one event per change.
 */

const RECORDS = 5;
const RUNS = 8;

/** A job or an edit over records numbered 0..RECORDS-1; edits fire before the item at or after `at`. */
interface Plan<C> {
  change: C;
  records: number[];
  holds: { at: number; edits: { record: number; change: C }[] }[];
}

function planOf<C>(change: fc.Arbitrary<C>, edit: fc.Arbitrary<C>): fc.Arbitrary<Plan<C>> {
  return fc.record({
    change,
    records: fc.shuffledSubarray([...Array(RECORDS).keys()], { minLength: 1 }),
    holds: fc.array(
      fc.record({
        at: fc.integer({ min: 1, max: RECORDS }),
        edits: fc.array(fc.record({ record: fc.integer({ min: 0, max: RECORDS - 1 }), change: edit }), {
          minLength: 1,
          maxLength: 3,
        }),
      }),
      { maxLength: 3 },
    ),
  });
}

/** A refusal of the rules (the domain's or a command's): the single edit changes nothing, as the job's item would. */
const refused = (error: unknown) => error instanceof Refusal || isCommandError(error);

/**
 * Runs the jobs with a worker that fires each job's held edits before its items, as the model does; returns each
 * job's outcomes by item, in seq order.
 */
async function runHeld<C>(
  app: TestApp,
  scope: { tenantId: string; sandbox: false },
  jobs: { id: string; plan: Plan<C> }[],
  edit: (e: { record: number; change: C }) => Promise<void>,
): Promise<(ItemOutcomeKind | undefined)[][]> {
  const got = await workJobsWithHolds(
    app,
    scope,
    jobs.map((j) => ({ id: j.id, holds: j.plan.holds })),
    edit,
  );
  return jobs.map((job, j) => job.plan.records.map((_, i) => got[j]!.get(i + 1)));
}

/** The model's run: each job's items in seq order, a hold's edits before the first item at or after its `at`. */
function modelRun<C, R>(
  jobs: { plan: Plan<C> }[],
  records: R[],
  apply: (record: R, change: C) => ItemOutcomeKind,
): ItemOutcomeKind[][] {
  return jobs.map((job) => {
    const fired = new Set<number>();
    return job.plan.records.map((r, i) => {
      job.plan.holds.forEach((h, k) => {
        if (!fired.has(k) && h.at <= i + 1) {
          fired.add(k);
          for (const e of h.edits) apply(records[e.record]!, e.change);
        }
      });
      return apply(records[r]!, job.plan.change);
    });
  });
}

/** Event counts by stream and type for these streams. */
async function eventCounts(app: TestApp, streams: string[], types: string[]) {
  const rows = await app.pool.query<{ stream_id: string; type: string; n: number }>(
    `SELECT stream_id, type, count(*)::int AS n FROM events
      WHERE stream_id = ANY($1::text[]) AND type = ANY($2::text[]) GROUP BY 1, 2`,
    [streams, types],
  );
  return (stream: string, type: string) => rows.rows.find((r) => r.stream_id === stream && r.type === type)?.n ?? 0;
}

const same = (what: string, actual: unknown, expected: unknown) => {
  if (JSON.stringify(actual) !== JSON.stringify(expected))
    throw new Error(`${what}: ${JSON.stringify(actual)}, expected ${JSON.stringify(expected)}`);
};

async function setUp(t: Test) {
  const app = await startApp(t);
  const { workspace } = await seedWorkspace(app, everyRole());
  const owner = memberActor(workspace, memberOf('owner'));
  const context = (now: Date) => staffContext(workspace.id, false, owner, now);
  return { app, workspace, context, scope: { tenantId: workspace.id, sandbox: false as const } };
}

/** Creates a job of a kind over these records, asked by the manager. */
async function jobOf(app: TestApp, workspace: Workspace, kind: string, params: unknown, items: unknown[], at: number) {
  return createJob(app.pool, {
    tenantId: workspace.id,
    sandbox: false,
    kind,
    actor: memberActor(workspace, memberOf('manager')),
    params,
    items: items.map((input) => ({ subject: Object.values(input as object)[0] as string, input })),
    now: new Date(at),
  });
}

// Tasks: assigned to a member, to nobody, or to an address that is no member (refused, item and edit alike).
const ASSIGNEES = [memberOf('admin'), memberOf('manager'), memberOf('counsellor'), null, 'gone@nowhere.example'];

interface ModelTask {
  assignee: string | null;
  changed: number;
}

t.test('bulk task assignments and single edits end as if run one at a time', async (t) => {
  const { app, workspace, context, scope } = await setUp(t);
  const member = (email: string | null) => email === null || workspace.settings.users.some((u) => u.email === email);
  const applyTask = (task: ModelTask, assignee: string | null): ItemOutcomeKind => {
    if (!member(assignee)) return 'refused';
    if (task.assignee === assignee) return 'skipped';
    task.assignee = assignee;
    task.changed += 1;
    return 'done';
  };
  let clock = Date.UTC(2026, 10, 1);
  let seeded = 0;
  const assignee = fc.constantFrom(...ASSIGNEES);
  const property = fc.asyncProperty(
    fc.array(planOf(assignee, assignee), { minLength: 1, maxLength: 3 }),
    async (plans) => {
      const [lead] = await seedJobLeads(app.pool, workspace, 1, 20_000 + seeded++);
      const tasks: string[] = [];
      const model: ModelTask[] = [];
      for (let i = 0; i < RECORDS; i++) {
        const first = ASSIGNEES[i % 4] as string | null;
        const task = await createTask(app.services.store, context(app.services.now()), {
          subject: { lead_id: lead!, application_id: null },
          title: `Call ${i}`,
          assignee: resolveAssignee(workspace, first),
          due_at: new Date(Date.UTC(2026, 11, 1 + i)),
        });
        tasks.push(task.id);
        model.push({ assignee: first, changed: 0 });
      }
      const jobs: { id: string; plan: Plan<string | null> }[] = [];
      for (const plan of plans) {
        clock += 1000;
        const items = plan.records.map((r) => ({ task_id: tasks[r]! }));
        jobs.push({
          id: await jobOf(app, workspace, TASK_BULK_KINDS.assign, { assignee: plan.change }, items, clock),
          plan,
        });
      }
      const expected = modelRun(jobs, model, applyTask);
      const outcomes = await runHeld(app, scope, jobs, async (e) => {
        try {
          const to = resolveAssignee(workspace, e.change);
          await handleTaskCommand(app.services.store, context(app.services.now()), tasks[e.record]!, (now) => ({
            type: 'change',
            assignee: to,
            now,
          }));
        } catch (error) {
          if (!refused(error)) throw error;
        }
      });
      same('the items’ outcomes', outcomes, expected);
      const count = await eventCounts(
        app,
        tasks.map((id) => `task-${id}`),
        ['task.changed'],
      );
      for (const [i, id] of tasks.entries()) {
        const row = await app.pool.query<{ email: string | null }>(
          `SELECT body->'assignee'->>'email' AS email FROM tasks WHERE id = $1 AND tenant_id = $2`,
          [id, workspace.id],
        );
        same(`task ${i}`, { assignee: row.rows[0]!.email, changed: count(`task-${id}`, 'task.changed') }, model[i]);
      }
    },
  );
  await checkProperty(t, 'bulk task assignments with held single edits', property, RUNS);
});

// Cases: moved to a stage of the workflow or to none (refused); edits also close and reopen a case (a closed case
// refuses a move, whoever asks).
type CaseChange = { type: 'move'; stage: string } | { type: 'status'; status: 'active' | 'closed' };

interface ModelCase {
  stage: string;
  status: string;
  moved: number;
  statusChanged: number;
}

t.test('bulk stage moves of applications and single edits end as if run one at a time', async (t) => {
  const { app, workspace, context, scope } = await setUp(t);
  const stages = workspace.settings.application_workflow.stages.map((s) => s.key);
  const applyCase = (c: ModelCase, change: CaseChange): ItemOutcomeKind => {
    if (change.type === 'status') {
      if (c.status === change.status) return 'skipped';
      c.status = change.status;
      c.statusChanged += 1;
      return 'done';
    }
    if (c.status === 'closed' || !stages.includes(change.stage)) return 'refused';
    if (c.stage === change.stage) return 'skipped';
    c.stage = change.stage;
    c.moved += 1;
    return 'done';
  };
  const move = fc.record({ type: fc.constant('move' as const), stage: fc.constantFrom(...stages, 'nowhere') });
  const edit: fc.Arbitrary<CaseChange> = fc.oneof(
    { weight: 3, arbitrary: move },
    {
      weight: 1,
      arbitrary: fc.record({
        type: fc.constant('status' as const),
        status: fc.constantFrom('active' as const, 'closed' as const),
      }),
    },
  );
  let clock = Date.UTC(2026, 10, 2);
  let seeded = 0;
  const property = fc.asyncProperty(
    fc.array(planOf<CaseChange>(move, edit), { minLength: 1, maxLength: 3 }),
    async (plans) => {
      const leads = await seedJobLeads(app.pool, workspace, RECORDS, 40_000 + seeded);
      seeded += RECORDS;
      const cases: string[] = [];
      const model: ModelCase[] = [];
      for (const lead of leads) {
        const opened = await convertLeadToApplication(app.services, context(app.services.now()), workspace, lead);
        cases.push(opened.id);
        model.push({ stage: stages[0]!, status: 'active', moved: 0, statusChanged: 0 });
      }
      const jobs: { id: string; plan: Plan<CaseChange> }[] = [];
      for (const plan of plans) {
        clock += 1000;
        const items = plan.records.map((r) => ({ application_id: cases[r]! }));
        const stage = plan.change.type === 'move' ? plan.change.stage : stages[0]!;
        jobs.push({
          id: await jobOf(app, workspace, APPLICATION_BULK_KINDS.move, { stage_key: stage }, items, clock),
          plan,
        });
      }
      const expected = modelRun(jobs, model, applyCase);
      const outcomes = await runHeld(app, scope, jobs, async (e) => {
        const c = e.change;
        try {
          await handleApplicationCommand(app.services.store, context(app.services.now()), cases[e.record]!, () =>
            c.type === 'move' ? { type: 'move_to_stage', stage: c.stage } : { type: 'set_status', status: c.status },
          );
        } catch (error) {
          if (!refused(error)) throw error;
        }
      });
      same('the items’ outcomes', outcomes, expected);
      const count = await eventCounts(
        app,
        cases.map((id) => `application-${id}`),
        ['application.stage_changed', 'application.status_changed'],
      );
      for (const [i, id] of cases.entries()) {
        const row = await app.pool.query<{ stage: string; status: string }>(
          `SELECT status->'stage'->>'key' AS stage, status->>'status' AS status FROM applications
            WHERE id = $1 AND tenant_id = $2`,
          [id, workspace.id],
        );
        const stream = `application-${id}`;
        same(
          `case ${i}`,
          {
            stage: row.rows[0]!.stage,
            status: row.rows[0]!.status,
            // The conversion's entry into the first stage is one stage change of its own.
            moved: count(stream, 'application.stage_changed') - 1,
            statusChanged: count(stream, 'application.status_changed'),
          },
          model[i],
        );
      }
    },
  );
  await checkProperty(t, 'bulk stage moves with held single edits', property, RUNS);
});
