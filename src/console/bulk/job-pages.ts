import { Type } from 'typebox';
import type { AppServices } from '../../bootstrap.js';
import { LEAD_BULK_KINDS } from '../../commands/bulk/lead-actions.js';
import type { TypedApp } from '../../http/typed-app.js';
import { findJob, itemsWithOutcome, jobProgress, recentJobs, type Job, type JobProgress } from '../../jobs/jobs.js';
import type { Queryable } from '../../storage/postgres.js';
import { ConsoleRefusal, sendPage, type MemberView } from '../context.js';
import { html, table, type Html } from '../html.js';
import { badge, notice, page, type BadgeTone } from '../layout.js';
import { viewOf } from '../routes.js';
import { Done, RecordParams, WorkspaceParams } from '../pages/record-schemas.js';
import { timeZoneOf, when } from '../time.js';

export const jobsBase = (view: MemberView) => `/console/w/${view.workspace.slug}/jobs`;

/** Refusals listed on a job's page (the count says how many there are in all). */
const LISTED = 500;

const STATE_WORDS: Record<Job['state'], [string, BadgeTone]> = {
  queued: ['Waiting to start', 'info'],
  running: ['Running', 'info'],
  done: ['Finished', 'ok'],
  failed: ['Stopped', 'bad'],
  cancelled: ['Cancelled', 'neutral'],
};

const stringParam = (job: Job, name: string): string | null => {
  const value = (job.params as Record<string, unknown> | null)?.[name];
  return typeof value === 'string' ? value : null;
};

/** What a job does, in the words of the work (the member's name for a person, the stage's name). */
export function describeJob(view: MemberView, job: Job): string {
  const s = view.workspace.settings;
  const member = (email: string | null) => s.users.find((u) => u.email === email)?.name ?? email;
  switch (job.kind) {
    case LEAD_BULK_KINDS.assign: {
      const owner = stringParam(job, 'owner_email');
      return owner ? `Assign leads to ${member(owner)}` : 'Take the owner off leads';
    }
    case LEAD_BULK_KINDS.move: {
      const key = stringParam(job, 'stage_key');
      return `Move leads to ${s.pipeline.stages.find((x) => x.key === key)?.name ?? key}`;
    }
    case LEAD_BULK_KINDS.task:
      return `Add the task “${stringParam(job, 'title') ?? ''}” to leads`;
    default:
      return job.kind.replaceAll(/[._]/g, ' ');
  }
}

const whoOf = (job: Job) =>
  job.actor.type === 'user' ? (job.actor.name ?? job.actor.email ?? 'a member') : 'the system';

function progressText(job: Job, p: JobProgress): string {
  const parts = [`${p.done} of ${p.total} done`];
  if (p.refused) parts.push(`${p.refused} left as they were (listed below)`);
  if (p.skipped) parts.push(`${p.skipped} needed no change`);
  if (job.state === 'done') return `Finished: ${parts.join(', ')}.`;
  if (job.state === 'failed') return `Stopped: ${parts.join(', ')}; ${p.pending} not done. ${job.error ?? ''}`.trim();
  if (job.state === 'queued') return `Waiting to start: ${p.total} to do.`;
  return `Running: ${parts.join(', ')}; ${p.pending} to go.`;
}

/** The names of the leads an item list names (subjects are lead ids), of this workspace only. */
async function leadNames(sql: Queryable, view: MemberView, ids: string[]): Promise<Map<string, string>> {
  const uuids = ids.filter((id) => /^[0-9a-f-]{36}$/.test(id));
  if (uuids.length === 0) return new Map();
  const rows = await sql.query<{ id: string; name: string | null }>(
    `SELECT id, body->>'full_name' AS name FROM leads WHERE tenant_id = $1 AND sandbox = false AND id = ANY($2::uuid[])`,
    [view.workspace.id, uuids],
  );
  return new Map(rows.rows.map((r) => [r.id, r.name || '(erased)']));
}

const isLeadJob = (job: Job) => (Object.values(LEAD_BULK_KINDS) as string[]).includes(job.kind);

/** The refused items, each with its lead linked and the reason. */
async function refusals(services: AppServices, view: MemberView, job: Job, p: JobProgress): Promise<Html | ''> {
  if (p.refused === 0) return '';
  const items = await itemsWithOutcome(services.pool, job, ['refused'], LISTED);
  const names = isLeadJob(job)
    ? await leadNames(
        services.pool,
        view,
        items.map((i) => i.subject ?? ''),
      )
    : new Map();
  const leads = `/console/w/${view.workspace.slug}/leads`;
  return html`<section aria-labelledby="refused">
    <h2 id="refused">Left as they were, and why</h2>
    ${p.refused > LISTED ? html`<p>The first ${LISTED} of ${p.refused} are listed.</p>` : ''}
    ${table({
      caption: `${p.refused} ${p.refused === 1 ? 'row' : 'rows'} not changed`,
      headings: ['Row', 'Lead', 'Why'],
      rows: items.map(
        (i) =>
          html`<tr>
            <td>${i.seq}</td>
            <td>
              ${names.has(i.subject ?? '') ? html`<a href="${leads}/${i.subject}">${names.get(i.subject ?? '')}</a>` : (i.subject ?? '—')}
            </td>
            <td>${i.reason ?? '—'}</td>
          </tr>`,
      ),
    })}
  </section>`;
}

/** The part of a job's page that changes while it runs (the script swaps it in place). */
function progressSection(view: MemberView, job: Job, p: JobProgress): Html {
  const [words, tone] = STATE_WORDS[job.state];
  const running = job.state === 'queued' || job.state === 'running';
  const settled = p.total - p.pending;
  return html`<section id="job-progress" aria-labelledby="progress-heading" data-running="${running ? 'yes' : 'no'}">
    <h2 id="progress-heading">Progress ${badge(words, tone)}</h2>
    <p>
      <label for="job-bar">Rows done</label>
      <progress id="job-bar" max="${Math.max(p.total, 1)}" value="${settled}">${settled} of ${p.total}</progress>
    </p>
    <p role="status">${progressText(job, p)}</p>
    ${
      running
        ? html`<p>
            <a href="${jobsBase(view)}/${job.id}">Refresh to see how far it has got</a> (the page refreshes itself when
            scripts run).
          </p>`
        : ''
    }
  </section>`;
}

async function jobPage(services: AppServices, view: MemberView, id: string, message?: string): Promise<string> {
  const job = await findJob(services.pool, { tenantId: view.workspace.id, sandbox: false }, id);
  if (!job) throw new ConsoleRefusal(404, 'There is no such job in this workspace.');
  const p = await jobProgress(services.pool, job);
  const zone = timeZoneOf(view.workspace);
  return page(
    view.frame(describeJob(view, job), 'Leads'),
    html`${notice(message)}
      <dl class="facts">
        <dt>Asked by</dt>
        <dd>${whoOf(job)}</dd>
        <dt>Asked at</dt>
        <dd>${when(job.createdAt, zone)}</dd>
        <dt>Rows</dt>
        <dd>${p.total}</dd>
        ${
          job.finishedAt
            ? html`<dt>Finished at</dt>
                <dd>${when(job.finishedAt, zone)}</dd>`
            : ''
        }
      </dl>
      ${progressSection(view, job, p)} ${await refusals(services, view, job, p)}
      <p><a href="${jobsBase(view)}">Recent bulk actions and imports</a></p>
      <script src="/console/assets/job-progress.js" defer></script>`,
  );
}

async function jobsPage(services: AppServices, view: MemberView): Promise<string> {
  const jobs = await recentJobs(services.pool, { tenantId: view.workspace.id, sandbox: false }, 30);
  const zone = timeZoneOf(view.workspace);
  const rows = await Promise.all(
    jobs.map(async (job) => {
      const p = await jobProgress(services.pool, job);
      const [words, tone] = STATE_WORDS[job.state];
      return html`<tr>
        <td><a href="${jobsBase(view)}/${job.id}">${describeJob(view, job)}</a></td>
        <td>${whoOf(job)}</td>
        <td>${when(job.createdAt, zone)}</td>
        <td>${badge(words, tone)}</td>
        <td>${p.done} of ${p.total}${p.refused ? `, ${p.refused} refused` : ''}</td>
      </tr>`;
    }),
  );
  return page(
    view.frame('Bulk actions and imports', 'Leads'),
    html`${
      jobs.length === 0
        ? html`<p>
            No bulk action or import yet. Select leads on the
            <a href="/console/w/${view.workspace.slug}/leads">Leads</a> page to act on several at once.
          </p>`
        : table({
            caption: 'The 30 most recent, newest first',
            headings: ['What', 'Asked by', 'Asked at', 'State', 'Rows'],
            rows,
          })
    }`,
  );
}

/** Refreshes a running job's progress in place every second and a half, and stops once it has ended. */
const JOB_PROGRESS_SCRIPT = `(function () {
  var section = document.getElementById('job-progress');
  if (!section || section.getAttribute('data-running') !== 'yes') return;
  var timer = setInterval(function () {
    fetch(location.pathname, { credentials: 'same-origin', headers: { accept: 'text/html' } })
      .then(function (response) { return response.ok ? response.text() : Promise.reject(response.status); })
      .then(function (text) {
        var fresh = new DOMParser().parseFromString(text, 'text/html');
        var next = fresh.getElementById('job-progress');
        if (!next) return;
        if (next.getAttribute('data-running') !== 'yes') { clearInterval(timer); location.replace(location.pathname); return; }
        var badge = section.querySelector('h2 .badge'), nextBadge = next.querySelector('h2 .badge');
        if (badge && nextBadge) badge.replaceWith(document.importNode(nextBadge, true));
        var bar = section.querySelector('progress'), nextBar = next.querySelector('progress');
        if (bar && nextBar) { bar.value = nextBar.value; bar.textContent = nextBar.textContent; }
        var said = section.querySelector('[role=status]'), nextSaid = next.querySelector('[role=status]');
        if (said && nextSaid && said.textContent !== nextSaid.textContent) said.textContent = nextSaid.textContent;
      })
      .catch(function () { clearInterval(timer); });
  }, 1500);
})();
`;

export function registerJobPages(app: TypedApp, services: AppServices): void {
  app.get('/assets/job-progress.js', { config: { console: 'open' } }, async (_request, reply) =>
    reply
      .type('text/javascript; charset=utf-8')
      .header('cache-control', 'public, max-age=3600')
      .send(JOB_PROGRESS_SCRIPT),
  );
  app.get(
    '/w/:slug/jobs',
    { schema: { params: WorkspaceParams }, config: { console: { operation: 'leads.view' } } },
    async (request, reply) => sendPage(reply, await jobsPage(services, viewOf(request))),
  );
  app.get(
    '/w/:slug/jobs/:id',
    {
      schema: { params: RecordParams, querystring: Type.Object({ done: Done }) },
      config: { console: { operation: 'leads.view' } },
    },
    async (request, reply) => {
      const message =
        request.query.done === 'started' ? 'The bulk action has started; it runs in the background.' : undefined;
      return sendPage(reply, await jobPage(services, viewOf(request), request.params.id, message));
    },
  );
}
