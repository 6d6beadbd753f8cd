import { Type } from 'typebox';
import type { AppServices } from '../../bootstrap.js';
import type { TypedApp } from '../../http/typed-app.js';
import { can } from '../../identity/permissions.js';
import { sendPage, type MemberView } from '../context.js';
import { html, type Html } from '../html.js';
import { badge, csrfField, notice, page } from '../layout.js';
import {
  applicationsWaitingOn,
  myFollowUps,
  myOpenTasks,
  troubledEndpoints,
  unownedNewLeads,
  type DayWindow,
  type EndpointTroubleLine,
  type FollowUpLine,
  type TaskLine,
} from '../queries/today.js';
import { viewOf } from '../routes.js';
import { dayAround, timeZoneOf, when } from '../time.js';
import { newForMe } from './notifications.js';
import { pendingDeliveriesWords } from './webhook-log.js';

// Declared here until src/console/schemas.ts (the shared field schemas) is on this branch.
const Params = Type.Object({ slug: Type.String({ pattern: '^[a-z0-9][a-z0-9-]{1,62}$' }) });

/** One list of Today: its heading, its lines, and what it says when there is nothing. */
function list(id: string, heading: string, lines: readonly Html[], empty: string, more?: Html): Html {
  return html`<section aria-labelledby="${id}">
    <h2 id="${id}">${heading} <span class="count">(${lines.length})</span></h2>
    ${
      lines.length === 0
        ? html`<p>${empty}</p>`
        : html`<ul class="lines">
            ${lines}
          </ul>`
    }
    ${more ?? ''}
  </section>`;
}

/** Where an instant falls for the member: before today (overdue), today, or later. */
function dueBadge(at: Date, day: DayWindow, overdueFrom: Date): Html | string {
  if (at < overdueFrom) return badge('overdue', 'bad');
  if (at < day.end) return badge('today', 'warn');
  return '';
}

function followUpLine(view: MemberView, zone: string, day: DayWindow, l: FollowUpLine): Html {
  return html`<li>
    ${dueBadge(l.follow_up_at, day, day.start)}
    <a href="/console/w/${view.workspace.slug}/leads/${l.id}">${l.full_name || 'Erased person'}</a> · ${l.stage} ·
    follow up ${when(l.follow_up_at, zone)}
  </li>`;
}

function taskLine(view: MemberView, zone: string, day: DayWindow, t: TaskLine): Html {
  const ws = view.workspace.slug;
  const subject = t.lead_id
    ? html`<a href="/console/w/${ws}/leads/${t.lead_id}">${t.subject || 'Erased person'}</a>`
    : html`<a href="/console/w/${ws}/applications/${t.application_id}">${t.subject}</a>`;
  return html`<li>
    ${dueBadge(t.due_at, day, day.now)}
    <a href="/console/w/${ws}/tasks/${t.id}">${t.title || 'Task'}</a> · for ${subject} · due ${when(t.due_at, zone)}
    ${
      can(view.role, 'tasks.change')
        ? html`<form method="post" action="/console/w/${ws}/tasks/${t.id}/complete" class="inline">
            ${csrfField(view.signedIn.csrf)}
            <button type="submit">Complete<span class="visually-hidden"> ${t.title || 'the task'}</span></button>
          </form>`
        : ''
    }
  </li>`;
}

function endpointLine(view: MemberView, zone: string, e: EndpointTroubleLine): Html {
  return html`<li>
    ${e.status === 'paused' ? badge('paused', 'bad') : badge('failing', 'warn')}
    <a href="/console/w/${view.workspace.slug}/webhooks/${e.id}">${e.url}</a>${e.sandbox ? ' (test mode)' : ''}
    ${e.status === 'paused' ? html` · since ${when(e.paused_at, zone)}` : ''}
    ${e.status === 'paused' ? ` · ${pendingDeliveriesWords(e.waiting, true)}` : ''}
    ${e.status !== 'paused' && e.retrying > 0 ? ` · ${pendingDeliveriesWords(e.retrying, false)}` : ''}
    ${e.failed > 0 ? ` · ${e.failed} failed for good this week` : ''}
  </li>`;
}

/** The member's worklist for the day, read in the workspace's zone. */
async function todayPage(services: AppServices, view: MemberView, done?: string): Promise<string> {
  const zone = timeZoneOf(view.workspace);
  const now = services.now();
  const day = { ...dayAround(now, zone), now };
  const ws = view.workspace;
  const firstStage = ws.settings.pipeline.stages[0]?.key ?? '';
  const oversees = can(view.role, 'webhooks.resume');
  const [fresh, followUps, tasks, newLeads, waiting, endpoints] = await Promise.all([
    newForMe(services, view, 5),
    myFollowUps(services.pool, ws.id, view.member.id, day),
    myOpenTasks(services.pool, ws.id, view.member.id),
    unownedNewLeads(services.pool, ws.id, firstStage),
    applicationsWaitingOn(services.pool, ws.id, view.member.id),
    oversees ? troubledEndpoints(services.pool, ws.id, now) : Promise.resolve([]),
  ]);
  const base = `/console/w/${ws.slug}`;
  return page(
    view.frame(`Today, ${day.date}`, 'Today'),
    html`${notice(done === 'completed' ? 'The task was completed.' : undefined)}
      <p class="hint">Your day in ${zone}. It is ${when(now, zone)}.</p>
      <div class="today">
        <section aria-labelledby="new-for-me">
          <h2 id="new-for-me">New for me <span class="count">(${fresh.total})</span></h2>
          ${
            fresh.lines.length === 0
              ? html`<p>Nothing new for you.</p>`
              : html`<ul class="lines">
                  ${fresh.lines}
                </ul>`
          }
          <p><a href="${base}/notifications">My notifications and emails</a></p>
        </section>
        ${list(
          'follow-ups',
          'My follow-ups due today or overdue',
          followUps.map((l) => followUpLine(view, zone, day, l)),
          'No follow-up is due today.',
        )}
        ${list(
          'tasks',
          'My open tasks',
          tasks.map((t) => taskLine(view, zone, day, t)),
          'You have no open task.',
          html`<p><a href="${base}/tasks">All my tasks</a></p>`,
        )}
        ${list(
          'new-leads',
          'New leads without an owner',
          newLeads.map(
            (l) =>
              html`<li>
                <a href="${base}/leads/${l.id}">${l.full_name || 'Erased person'}</a> · ${l.source} · came
                ${when(l.created_at, zone)}
              </li>`,
          ),
          'Every new lead has an owner.',
          html`<p><a href="${base}/leads?owner=none">Every lead without an owner</a></p>`,
        )}
        ${list(
          'applications',
          'Applications waiting on me',
          waiting.map(
            (a) =>
              html`<li>
                <a href="${base}/applications/${a.id}">${a.case_ref}</a> · ${a.full_name || 'Erased person'} ·
                ${a.stage}: ${a.module} to update · since ${when(a.since, zone)}
              </li>`,
          ),
          'No application of your leads waits on a module.',
        )}
        ${
          oversees
            ? list(
                'endpoints',
                'Paused endpoints and failing deliveries',
                endpoints.map((e) => endpointLine(view, zone, e)),
                'Every webhook endpoint is delivering.',
              )
            : ''
        }
      </div>`,
  );
}

/** Today: the workspace's first page, for every member. */
export function registerTodayPages(app: TypedApp, services: AppServices): void {
  app.get(
    '/w/:slug',
    {
      schema: { params: Params, querystring: Type.Object({ done: Type.Optional(Type.String({ maxLength: 20 })) }) },
      config: { console: { operation: 'workspace.view' } },
    },
    async (request, reply) => sendPage(reply, await todayPage(services, viewOf(request), request.query.done)),
  );
}
