import { Type, type Static } from 'typebox';
import type { FastifyReply } from 'fastify';
import type { AppServices } from '../../bootstrap.js';
import { APPLICATION_BULK_KINDS } from '../../commands/bulk/application-actions.js';
import type { TypedApp } from '../../http/typed-app.js';
import { createJob } from '../../jobs/jobs.js';
import type { Queryable } from '../../storage/postgres.js';
import { allow, ConsoleRefusal, sendPage, type MemberView } from '../context.js';
import { actorOf } from '../forms.js';
import { html } from '../html.js';
import { choice, csrfField, page } from '../layout.js';
import { viewOf } from '../routes.js';
import { Choice, listOf } from '../schemas.js';
import { FormBody, Text, WorkspaceParams } from '../pages/record-schemas.js';
import { MAX_SELECTION, SelectionFields, selectionFields } from './selection.js';
import { jobsBase } from './job-pages.js';

/*
 * Bulk work on applications: what the permission table allows on a case is moving its stage (applications.change);
 * cases have no owner. Export goes to the lists' CSV export with the same selection.
 */

const BulkForm = FormBody({
  ...SelectionFields,
  action: Type.Optional(Choice(['move', 'export'] as const, 'Choose what to do with the selected applications.')),
  confirm: Type.Optional(Text(10)),
  stage: Type.Optional(Text(100)),
});
type BulkFormBody = Static<typeof BulkForm>;

const applicationsPath = (view: MemberView) => `/console/w/${view.workspace.slug}/applications`;

/** The live applications a selection names, of the workspace in view only, newest first. */
async function selectedApplications(sql: Queryable, view: MemberView, form: BulkFormBody): Promise<string[]> {
  if (form.scope === 'matching') {
    // Until the applications list has filters to resolve, only an unfiltered list's "all matching" is known.
    if ((form.query ?? '').trim() !== '')
      throw new ConsoleRefusal(
        400,
        'Select the applications by ticking their rows: a filtered list’s “all” is not yet known here.',
      );
    const all = await sql.query<{ id: string }>(
      `SELECT id FROM applications WHERE tenant_id = $1 AND sandbox = false ORDER BY number DESC LIMIT $2`,
      [view.workspace.id, MAX_SELECTION + 1],
    );
    if (all.rows.length > MAX_SELECTION)
      throw new ConsoleRefusal(
        400,
        `More than ${MAX_SELECTION.toLocaleString('en')} applications: select fewer at once.`,
      );
    return all.rows.map((r) => r.id);
  }
  const ids = [...new Set(listOf(form.ids).map((id) => id.toLowerCase()))];
  if (ids.length === 0) return [];
  const found = await sql.query<{ id: string }>(
    `SELECT id FROM applications WHERE tenant_id = $1 AND sandbox = false AND id = ANY($2::uuid[]) ORDER BY number DESC`,
    [view.workspace.id, ids],
  );
  return found.rows.map((r) => r.id);
}

function confirmation(view: MemberView, form: BulkFormBody, count: number, error?: string): string {
  const noun = count === 1 ? 'application' : 'applications';
  const stages = view.workspace.settings.application_workflow.stages;
  return page(
    view.frame(`Move to a stage: ${count} ${noun}`, 'Applications'),
    html`<p>
        This moves ${count} ${noun}, each as its own change on its timeline with you as the one who made it. It runs in
        the background: the next page shows its progress, and which cases were left as they were and why.
      </p>
      <form method="post" action="${applicationsPath(view)}/bulk" class="confirm">
        ${csrfField(view.signedIn.csrf)}
        ${selectionFields(form).map(([name, value]) => html`<input type="hidden" name="${name}" value="${value}" />`)}
        <input type="hidden" name="action" value="move" />
        <input type="hidden" name="confirm" value="yes" />
        ${choice({ name: 'stage', label: 'Stage', options: stages.map((s) => [s.key, s.name]), value: form.stage, error })}
        <button type="submit">Move ${count} ${noun}</button>
        <a href="${applicationsPath(view)}">Cancel, change nothing</a>
      </form> `,
  );
}

async function bulk(services: AppServices, view: MemberView, form: BulkFormBody, reply: FastifyReply) {
  if (!form.action) throw new ConsoleRefusal(400, 'Choose what to do with the selected applications.');
  if (form.action === 'export') return reply.redirect(`${applicationsPath(view)}/export`, 307);
  allow(view, 'applications.change');
  const ids = await selectedApplications(services.pool, view, form);
  if (ids.length === 0)
    throw new ConsoleRefusal(400, 'No application was selected: tick at least one row, or choose all matching.');
  if (form.confirm !== 'yes') return sendPage(reply, confirmation(view, form, ids.length));
  const stage = view.workspace.settings.application_workflow.stages.find((s) => s.key === form.stage);
  if (!stage) return sendPage(reply, confirmation(view, form, ids.length, 'Choose a stage.'), 400);
  const id = await createJob(services.pool, {
    tenantId: view.workspace.id,
    sandbox: false,
    kind: APPLICATION_BULK_KINDS.move,
    actor: actorOf(view),
    params: { stage_key: stage.key },
    items: ids.map((application_id) => ({ subject: application_id, input: { application_id } })),
    now: services.now(),
  });
  return reply.redirect(`${jobsBase(view)}/${id}?done=started`, 303);
}

export function registerApplicationBulkPages(app: TypedApp, services: AppServices): void {
  app.post(
    '/w/:slug/applications/bulk',
    { schema: { params: WorkspaceParams, body: BulkForm }, config: { console: { operation: 'applications.view' } } },
    async (request, reply) => bulk(services, viewOf(request), request.body, reply),
  );
}
