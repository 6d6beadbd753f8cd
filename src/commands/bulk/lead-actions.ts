import { Type, type Static } from 'typebox';
import type { AppServices } from '../../bootstrap.js';
import { leadStream } from '../../domain/leads/lead.js';
import type { LeadPatch } from '../../domain/leads/decide.js';
import { Refusal } from '../../domain/refusal.js';
import type { Actor } from '../../events/types.js';
import { can, type Operation } from '../../identity/permissions.js';
import { defineJobKind, type JobBatchWork, type JobItemWork, type JobKind, type TypedJob } from '../../jobs/kinds.js';
import type { ItemOutcome } from '../../jobs/jobs.js';
import { newId } from '../../shared/ids.js';
import { findWorkspace } from '../../workspaces/repository.js';
import type { Workspace } from '../../workspaces/workspace.js';
import { runLeadWrite } from '../leads/lead-write.js';
import { updateLeadIn } from '../leads/update-lead.js';
import { staffContext, runCommand } from '../run-command.js';
import { createTaskIn, resolveAssignee } from '../tasks/task-commands.js';
import { taskStream } from '../../domain/tasks/index.js';
import type { Queryable } from '../../storage/postgres.js';
import { refusalReason } from './refusal-reason.js';

/*
 * The bulk actions on leads, as job kinds (src/jobs): each item is one lead, changed through the same command step as
 * the single edit (updateLeadIn, createTaskIn), with the job's actor, in a transaction that also writes the item's
 * outcome. The member's role is asked again at every item: a member whose role changed mid-job changes nothing more.
 */

export const LEAD_BULK_KINDS = {
  assign: 'leads.assign',
  move: 'leads.move',
  task: 'leads.task',
} as const;

const LeadItem = Type.Object({ lead_id: Type.String({ format: 'uuid' }) }, { additionalProperties: false });

export const AssignParams = Type.Object(
  { owner_email: Type.Union([Type.String(), Type.Null()]) },
  { additionalProperties: false },
);
export const MoveParams = Type.Object(
  { stage_key: Type.String(), lost_reason_key: Type.Union([Type.String(), Type.Null()]) },
  { additionalProperties: false },
);
/** `assignee`: a member's email, `lead_owner` (each lead's owner at the time), or null (nobody). */
export const TaskParams = Type.Object(
  {
    title: Type.String({ minLength: 1, maxLength: 500 }),
    due_at: Type.String(),
    assignee: Type.Union([Type.String(), Type.Null()]),
  },
  { additionalProperties: false },
);

type JobServices = Pick<AppServices, 'pool' | 'store' | 'now'>;

/** The workspace as it is now, and the job's member still allowed the operation, or a refusal of the item. */
async function allowedNow(services: JobServices, job: TypedJob<unknown>, operation: Operation): Promise<Workspace> {
  const workspace = await findWorkspace(services.pool, job.tenantId);
  if (!workspace) throw new Refusal('not_found', 'not_found', 'The workspace is gone');
  const member = memberOf(workspace, job.actor);
  if (!member || !can(member.role, operation))
    throw new Refusal('conflict', 'not_allowed', 'Its member’s role no longer allows this change');
  return workspace;
}

function memberOf(workspace: Workspace, actor: Actor) {
  if (actor.type !== 'user') return undefined;
  return workspace.settings.users.find((u) => u.id === actor.user_id && u.active && !u.pending);
}

const UNCHANGED = { outcome: 'skipped', reason: 'Nothing was different, so nothing was changed.' } as const;

/** One lead changed by a PATCH, the item settled in the same transaction (skipped when nothing was different). */
async function patchLead(
  services: JobServices,
  job: TypedJob<unknown>,
  item: JobItemWork<{ lead_id: string }>,
  patch: LeadPatch,
): Promise<void> {
  const workspace = await allowedNow(services, job, 'leads.change');
  const leadId = item.input.lead_id;
  const context = staffContext(job.tenantId, job.sandbox, job.actor, services.now());
  await runLeadWrite(services, context, [leadStream(leadId)], async (tx) => {
    const changed = await updateLeadIn(tx, { workspace, sandbox: job.sandbox, leadId, patch }, () =>
      item.claim(tx.sql),
    );
    if (changed) await item.settle(tx.sql, changed.events > 0 ? { outcome: 'done' } : UNCHANGED);
  });
}

/**
 * Several leads in one lead write: the gate once, each lead's stream locked, the items claimed together, then for
 * each in seq order the same step as `patchLead` (its own events), and the outcomes written together. A lead the
 * rules refuse is settled as refused (the refusal is thrown before anything of it is written); any other error rolls
 * the whole group back (the runner then does its items one by one).
 */
async function patchLeads(
  services: JobServices,
  job: TypedJob<unknown>,
  batch: JobBatchWork<{ lead_id: string }>,
  patch: LeadPatch,
): Promise<void> {
  const workspace = await allowedNow(services, job, 'leads.change');
  const context = staffContext(job.tenantId, job.sandbox, job.actor, services.now());
  const streams = [...new Set(batch.items.map((item) => leadStream(item.input.lead_id)))].sort();
  await runLeadWrite(services, context, streams, async (tx) => {
    const claimed = await batch.claim(tx.sql);
    // The leads' steps run side by side on the transaction's connection, whose statements are pipelined: each round
    // (lock, read, append) of every lead leaves in one write, and the server runs them in the order sent.
    const settled = await Promise.allSettled(
      batch.items
        .filter((item) => claimed.has(item.seq))
        .map(async (item): Promise<[number, ItemOutcome]> => {
          try {
            const request = { workspace, sandbox: job.sandbox, leadId: item.input.lead_id, patch };
            const changed = (await updateLeadIn(tx, request))!;
            return [item.seq, changed.events > 0 ? { outcome: 'done' } : UNCHANGED];
          } catch (error) {
            const reason = refusalReason(error);
            if (reason === undefined) throw error;
            return [item.seq, { outcome: 'refused', reason }];
          }
        }),
    );
    // A fault rolls the group back, once every statement sent has been answered.
    const fault = settled.find((r) => r.status === 'rejected');
    if (fault) throw fault.reason;
    const outcomes = settled.map((r) => (r as PromiseFulfilledResult<[number, ItemOutcome]>).value);
    await batch.settle(tx.sql, outcomes);
  });
}

const movePatch = (params: Static<typeof MoveParams>): LeadPatch => ({
  stage_key: params.stage_key,
  ...(params.lost_reason_key ? { lost_reason_key: params.lost_reason_key } : {}),
});

export function leadBulkKinds(services: JobServices): JobKind<unknown, unknown>[] {
  const assign = defineJobKind({
    kind: LEAD_BULK_KINDS.assign,
    params: AssignParams,
    input: LeadItem,
    run: (job, item) => patchLead(services, job, item, { owner_email: job.params.owner_email }),
    runBatch: (job, batch) => patchLeads(services, job, batch, { owner_email: job.params.owner_email }),
    refusalReason,
  });
  const move = defineJobKind({
    kind: LEAD_BULK_KINDS.move,
    params: MoveParams,
    input: LeadItem,
    run: (job, item) => patchLead(services, job, item, movePatch(job.params)),
    runBatch: (job, batch) => patchLeads(services, job, batch, movePatch(job.params)),
    refusalReason,
  });
  const task = defineJobKind({
    kind: LEAD_BULK_KINDS.task,
    params: TaskParams,
    input: LeadItem,
    run: async (job, item) => {
      const workspace = await allowedNow(services, job, 'tasks.change');
      const context = staffContext(job.tenantId, job.sandbox, job.actor, services.now());
      const id = newId(context.now.getTime());
      await runCommand(services.store, context, [taskStream(id)], async (tx) => {
        if (!(await item.claim(tx.sql))) return;
        const lead = item.input.lead_id;
        const assignee =
          job.params.assignee === 'lead_owner'
            ? await ownerOf(tx.sql, job, lead).then((email) => (email ? resolveAssignee(workspace, email) : null))
            : resolveAssignee(workspace, job.params.assignee);
        const created = await createTaskIn(tx, id, {
          subject: { lead_id: lead, application_id: null },
          title: job.params.title,
          assignee,
          due_at: new Date(job.params.due_at),
        });
        await item.settle(tx.sql, { outcome: 'done', result: created.id });
      });
    },
    refusalReason,
  });
  return [assign, move, task] as JobKind<unknown, unknown>[];
}

async function ownerOf(sql: Queryable, job: TypedJob<unknown>, leadId: string): Promise<string | null> {
  const rows = await sql.query<{ email: string | null }>(
    `SELECT body->'owner'->>'email' AS email FROM leads WHERE id = $1 AND tenant_id = $2 AND sandbox = $3`,
    [leadId, job.tenantId, job.sandbox],
  );
  return rows.rows[0]?.email ?? null;
}
