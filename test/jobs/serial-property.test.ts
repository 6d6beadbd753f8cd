import fc from 'fast-check';
import t from 'tap';
import { pino } from 'pino';
import { LEAD_BULK_KINDS } from '../../src/commands/bulk/lead-actions.js';
import { isCommandError } from '../../src/commands/errors.js';
import { updateLead } from '../../src/commands/leads/update-lead.js';
import { staffContext } from '../../src/commands/run-command.js';
import type { LeadPatch } from '../../src/domain/leads/decide.js';
import { createJob, itemsWithOutcome, type ItemOutcomeKind } from '../../src/jobs/jobs.js';
import { findLead } from '../../src/projections/leads-queries.js';
import { JobWorker } from '../../src/subscribers/job-worker.js';
import { jobKindsOf } from '../../src/subscribers/job-kinds.js';
import { checkProperty } from '../support/properties.js';
import { seedWorkspace, startApp } from '../support/app.js';
import { everyRole, memberOf } from '../identity/support.js';
import { jobEnded, memberActor, seedJobLeads, workJobsWithHolds } from './support.js';

/*
 * Random bulk actions (assign an owner, move a stage) over random selections, with single edits of the same leads
 * committed while a job is held before one of its transactions: every lead must end as if the actions had run one at
 * a time in that order (a model applies them so), each effective change one event, each item's outcome the model's.
 */

const LEADS = 6;
const MEERA = 'meera@northstar.example';
const OWNERS = [memberOf('admin'), memberOf('manager'), MEERA, null] as const;
const STAGES = ['new', 'contacted', 'qualified', 'counselling'] as const;

type Change = { type: 'assign'; owner: string | null } | { type: 'move'; stage: string };
interface JobPlan {
  change: Change;
  /** Indexes of the leads selected, in the selection's order. */
  leads: number[];
  /** Single edits committed before the transaction whose first item is at or after `at` (1-based). */
  holds: { at: number; edits: { lead: number; change: Change }[] }[];
}

const change: fc.Arbitrary<Change> = fc.oneof(
  fc.record({ type: fc.constant('assign' as const), owner: fc.constantFrom(...OWNERS) }),
  fc.record({ type: fc.constant('move' as const), stage: fc.constantFrom(...STAGES) }),
);
const plan: fc.Arbitrary<JobPlan> = fc.record({
  change,
  leads: fc.shuffledSubarray([...Array(LEADS).keys()], { minLength: 1 }),
  holds: fc.array(
    fc.record({
      at: fc.integer({ min: 1, max: LEADS }),
      edits: fc.array(fc.record({ lead: fc.integer({ min: 0, max: LEADS - 1 }), change }), {
        minLength: 1,
        maxLength: 3,
      }),
    }),
    { maxLength: 3 },
  ),
});

interface ModelLead {
  branch: string;
  owner: string | null;
  stage: string;
  assigned: number;
  updated: number;
}

/** What a change does to a lead, by the lead rules: refused, nothing different, or done (and the lead after). */
function apply(lead: ModelLead, c: Change, branchOf: (email: string) => string): ItemOutcomeKind {
  if (c.type === 'assign') {
    if (c.owner !== null && branchOf(c.owner) !== lead.branch) return 'refused';
    if (c.owner === lead.owner) return 'skipped';
    lead.owner = c.owner;
    lead.assigned += 1;
    return 'done';
  }
  if (c.stage === lead.stage) return 'skipped';
  lead.stage = c.stage;
  lead.updated += 1;
  return 'done';
}

const patchOf = (c: Change): LeadPatch => (c.type === 'assign' ? { owner_email: c.owner } : { stage_key: c.stage });

t.test('bulk jobs and single edits end as if run one at a time', async (t) => {
  const app = await startApp(t);
  const { workspace } = await seedWorkspace(app, {
    users: [...everyRole().users, { name: 'Meera Iyer', email: MEERA, role: 'counsellor', branch: 'BLR' }],
  });
  const branchCode = (id: string) => workspace.settings.branches.find((b) => b.id === id)!.code;
  const branchOf = (email: string) => branchCode(workspace.settings.users.find((u) => u.email === email)!.branch_id!);
  const editor = memberActor(workspace, memberOf('counsellor'));
  const scope = { tenantId: workspace.id, sandbox: false };
  let seeded = 0;
  let clock = Date.UTC(2026, 10, 1);

  const property = fc.asyncProperty(
    fc.array(plan, { minLength: 1, maxLength: 3 }),
    fc.integer({ min: 1, max: 3 }),
    async (plans, perTransaction) => {
      const leads = await seedJobLeads(app.pool, workspace, LEADS, 10_000 + seeded);
      seeded += LEADS;
      const model: ModelLead[] = [];
      for (const id of leads) {
        const lead = (await findLead(app.pool, workspace.id, false, id))!;
        model.push({
          branch: lead.branch.code,
          owner: lead.owner?.email ?? null,
          stage: lead.stage.key,
          assigned: 0,
          updated: 0,
        });
      }
      const edit = async (e: { lead: number; change: Change }) => {
        try {
          await updateLead(app.services, {
            workspace,
            sandbox: false,
            leadId: leads[e.lead]!,
            patch: patchOf(e.change),
            context: (now) => staffContext(workspace.id, false, editor, now),
          });
        } catch (error) {
          if (!isCommandError(error)) throw error;
        }
      };
      // The jobs, oldest first (the worker takes them in that order), and the model's expected outcomes.
      const jobs: { id: string; plan: JobPlan; expected: ItemOutcomeKind[] }[] = [];
      for (const p of plans) {
        clock += 1000;
        const id = await createJob(app.pool, {
          ...scope,
          kind: p.change.type === 'assign' ? LEAD_BULK_KINDS.assign : LEAD_BULK_KINDS.move,
          actor: memberActor(workspace, memberOf('manager')),
          params:
            p.change.type === 'assign'
              ? { owner_email: p.change.owner }
              : { stage_key: p.change.stage, lost_reason_key: null },
          items: p.leads.map((i) => ({ subject: leads[i]!, input: { lead_id: leads[i]! } })),
          now: new Date(clock),
        });
        jobs.push({ id, plan: p, expected: [] });
      }
      // The model: each job's items in seq order, in transactions of `perTransaction`; a hold's edits before the first
      // transaction starting at or after its item.
      for (const job of jobs) {
        const fired = new Set<number>();
        for (let seq = 1; seq <= job.plan.leads.length; seq++) {
          if ((seq - 1) % perTransaction === 0)
            job.plan.holds.forEach((h, k) => {
              if (!fired.has(k) && h.at <= seq) {
                fired.add(k);
                for (const e of h.edits) apply(model[e.lead]!, e.change, branchOf);
              }
            });
          job.expected.push(apply(model[job.plan.leads[seq - 1]!]!, job.plan.change, branchOf));
        }
      }
      const outcomesOf = await workJobsWithHolds(
        app,
        scope,
        jobs.map((j) => ({ id: j.id, holds: j.plan.holds })),
        edit,
        { itemsPerTransaction: perTransaction },
      );
      // Holds past a job's last transaction never fired, in the model or here: they change nothing.
      for (const [j, job] of jobs.entries()) {
        const got = outcomesOf[j]!;
        const outcomes = job.expected.map((_, i) => got.get(i + 1));
        if (JSON.stringify(outcomes) !== JSON.stringify(job.expected))
          throw new Error(`job outcomes ${JSON.stringify(outcomes)}, expected ${JSON.stringify(job.expected)}`);
      }
      const counts = await app.pool.query<{ stream_id: string; type: string; n: number }>(
        `SELECT stream_id, type, count(*)::int AS n FROM events
          WHERE stream_id = ANY($1::text[]) AND type IN ('lead.assigned', 'lead.updated') GROUP BY 1, 2`,
        [leads.map((l) => `lead-${l}`)],
      );
      const count = (lead: string, type: string) =>
        counts.rows.find((r) => r.stream_id === `lead-${lead}` && r.type === type)?.n ?? 0;
      for (const [i, id] of leads.entries()) {
        const lead = (await findLead(app.pool, workspace.id, false, id))!;
        const m = model[i]!;
        const actual = {
          owner: lead.owner?.email ?? null,
          stage: lead.stage.key,
          assigned: count(id, 'lead.assigned'),
          updated: count(id, 'lead.updated'),
        };
        const expected = { owner: m.owner, stage: m.stage, assigned: m.assigned, updated: m.updated };
        if (JSON.stringify(actual) !== JSON.stringify(expected))
          throw new Error(`lead ${i}: ${JSON.stringify(actual)}, expected ${JSON.stringify(expected)}`);
      }
    },
  );
  await checkProperty(t, 'bulk jobs with held single edits', property, 12);
});

/*
 * The same jobs with single edits racing them (started while a job is held, not waited for) and the worker stopped
 * and a new one started halfway: whatever the order the writes took, the log must read as one serial run. Each lead's
 * events, replayed in order, are each a real change and end at the lead as the read model has it; each item done has
 * exactly one event caused by its job (causation_id), with the job's value; one refused or skipped has none.
 */
t.test('bulk jobs racing single edits and a worker restart read as one serial run in the log', async (t) => {
  const app = await startApp(t);
  const { workspace } = await seedWorkspace(app, {
    users: [...everyRole().users, { name: 'Meera Iyer', email: MEERA, role: 'counsellor', branch: 'BLR' }],
  });
  const branchOf = (email: string) =>
    workspace.settings.branches.find(
      (b) => b.id === workspace.settings.users.find((u) => u.email === email)!.branch_id,
    )!.code;
  const editor = memberActor(workspace, memberOf('counsellor'));
  const scope = { tenantId: workspace.id, sandbox: false };
  let seeded = 0;
  let clock = Date.UTC(2026, 10, 2);

  const property = fc.asyncProperty(
    fc.array(plan, { minLength: 1, maxLength: 3 }),
    fc.integer({ min: 1, max: 3 }),
    fc.option(fc.record({ job: fc.nat(2), at: fc.integer({ min: 1, max: LEADS }) }), { nil: undefined }),
    async (plans, perTransaction, restartAt) => {
      const leads = await seedJobLeads(app.pool, workspace, LEADS, 50_000 + seeded);
      seeded += LEADS;
      const initial = await Promise.all(leads.map((id) => findLead(app.pool, workspace.id, false, id)));
      const jobs: { id: string; plan: JobPlan }[] = [];
      for (const p of plans) {
        clock += 1000;
        const id = await createJob(app.pool, {
          ...scope,
          kind: p.change.type === 'assign' ? LEAD_BULK_KINDS.assign : LEAD_BULK_KINDS.move,
          actor: memberActor(workspace, memberOf('manager')),
          params:
            p.change.type === 'assign'
              ? { owner_email: p.change.owner }
              : { stage_key: p.change.stage, lost_reason_key: null },
          items: p.leads.map((i) => ({ subject: leads[i]!, input: { lead_id: leads[i]! } })),
          now: new Date(clock),
        });
        jobs.push({ id, plan: p });
      }
      const racing: Promise<void>[] = [];
      const fired = new Set<string>();
      let restarted: Promise<void> | undefined;
      const hook = async (job: { id: string }, seq: number) => {
        const j = jobs.findIndex((x) => x.id === job.id);
        for (const [k, h] of jobs[j]!.plan.holds.entries())
          if (!fired.has(`${j}:${k}`) && h.at <= seq) {
            fired.add(`${j}:${k}`);
            for (const e of h.edits)
              racing.push(
                updateLead(app.services, {
                  workspace,
                  sandbox: false,
                  leadId: leads[e.lead]!,
                  patch: patchOf(e.change),
                  context: (now) => staffContext(workspace.id, false, editor, now),
                })
                  .then(() => undefined)
                  .catch((error: unknown) => {
                    if (!isCommandError(error)) throw error;
                  }),
              );
          }
        if (restartAt && !restarted && j === restartAt.job % jobs.length && seq >= restartAt.at)
          restarted = worker.stop().then(() => (worker = newWorker()).start());
      };
      const newWorker = () =>
        new JobWorker(app.services, jobKindsOf(app.services), pino({ level: 'silent' }), {
          pollIntervalMs: 20,
          itemsPerTransaction: perTransaction,
          beforeItem: hook,
        });
      let worker = newWorker();
      worker.start();
      try {
        for (const job of jobs) await jobEnded(app.pool, scope, job.id);
        await Promise.all(racing);
      } finally {
        await restarted;
        await worker.stop();
      }
      const events = await app.pool.query<{
        stream_id: string;
        type: string;
        owner: string | null;
        stage: string;
        job: string | null;
      }>(
        `SELECT stream_id, type, data->'payload'->'owner'->>'email' AS owner, data->'payload'->'stage'->>'key' AS stage,
                metadata->>'causation_id' AS job
           FROM events WHERE stream_id = ANY($1::text[]) AND type IN ('lead.assigned', 'lead.updated')
          ORDER BY stream_id, revision`,
        [leads.map((l) => `lead-${l}`)],
      );
      for (const [i, id] of leads.entries()) {
        let owner = initial[i]!.owner?.email ?? null;
        let stage = initial[i]!.stage.key;
        for (const e of events.rows.filter((r) => r.stream_id === `lead-${id}`)) {
          if (e.type === 'lead.assigned') {
            if (e.owner === owner) throw new Error(`lead ${i}: an assignment that changed nothing`);
            owner = e.owner;
          } else {
            if (e.stage === stage) throw new Error(`lead ${i}: a stage move that changed nothing`);
            stage = e.stage;
          }
        }
        const now = (await findLead(app.pool, workspace.id, false, id))!;
        if ((now.owner?.email ?? null) !== owner || now.stage.key !== stage)
          throw new Error(
            `lead ${i}: the log ends at ${owner}/${stage}, the lead is ${now.owner?.email}/${now.stage.key}`,
          );
      }
      for (const job of jobs) {
        const items = await itemsWithOutcome(app.pool, { id: job.id, ...scope }, ['done', 'refused', 'skipped'], 100);
        if (items.length !== job.plan.leads.length) throw new Error(`job ${job.id}: ${items.length} outcomes`);
        for (const item of items) {
          const caused = events.rows.filter((r) => r.stream_id === `lead-${item.subject}` && r.job === job.id);
          const c = job.plan.change;
          if (item.outcome !== 'done') {
            if (caused.length !== 0) throw new Error(`an item ${item.outcome} changed its lead`);
            if (
              item.outcome === 'refused' &&
              (c.type !== 'assign' ||
                c.owner === null ||
                branchOf(c.owner) === initial[leads.indexOf(item.subject!)]!.branch.code)
            )
              throw new Error(`an item refused for no reason of the rules: ${item.reason}`);
            continue;
          }
          if (caused.length !== 1) throw new Error(`an item done made ${caused.length} events`);
          const e = caused[0]!;
          if (c.type === 'assign' ? e.owner !== c.owner : e.stage !== c.stage)
            throw new Error(`an item done wrote ${e.owner}/${e.stage}, not the job's value`);
        }
      }
    },
  );
  await checkProperty(t, 'bulk jobs racing single edits, with a restart', property, 12);
});
