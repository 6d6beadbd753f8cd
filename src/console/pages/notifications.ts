import { Type } from 'typebox';
import type { AppServices } from '../../bootstrap.js';
import { toldLine } from '../../domain/notifications/words.js';
import type { TypedApp } from '../../http/typed-app.js';
import { can } from '../../identity/permissions.js';
import { recordPath, tellable } from '../../notifications/facts.js';
import { saveSettings, settingsOf, unsubscribe, unsubscribeTokenHolds } from '../../notifications/settings.js';
import { markSeen, unseenOf } from '../../notifications/unseen.js';
import { findWorkspace } from '../../workspaces/repository.js';
import { ConsoleRefusal, frameOf, sendPage, type MemberView } from '../context.js';
import { html, type Html } from '../html.js';
import { csrfField, notice, page } from '../layout.js';
import { viewOf } from '../routes.js';
import { Checkbox, formBody, SlugParams, Slug, Uuid } from '../schemas.js';
import { timeZoneOf, when } from '../time.js';

const path = (view: MemberView) => `/console/w/${view.workspace.slug}/notifications`;
const Query = Type.Object({ done: Type.Optional(Type.Union([Type.Literal('saved'), Type.Literal('seen')])) });
const SettingsBody = formBody({ at_once: Checkbox, digest: Checkbox });
const SeenBody = formBody({
  shown_at: Type.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{3}Z$' }),
});
const UnsubscribeParams = Type.Object({
  slug: Slug,
  member: Uuid,
  token: Type.String({ minLength: 1, maxLength: 100, pattern: '^[A-Za-z0-9_-]+$' }),
});
/** The confirm page's form (`confirm=yes`) or a mail client's one-click POST (RFC 8058). */
const UnsubscribeBody = Type.Object({
  confirm: Type.Optional(Type.Literal('yes')),
  'List-Unsubscribe': Type.Optional(Type.Literal('One-Click')),
});

/** At most this many unseen notifications are read for a page; past it the count says "100+". */
const READ_AT_MOST = 100;

/**
 * What is new for the member in this workspace: the count and the first `limit` lines, each checked as a mail is
 * (what the member may no longer see is neither counted nor shown).
 */
export async function newForMe(services: AppServices, view: MemberView, limit = 50) {
  const latest = await unseenOf(services.pool, view.workspace.id, view.member.id, READ_AT_MOST);
  const zone = timeZoneOf(view.workspace);
  const lines: Html[] = [];
  let count = 0;
  for (const row of latest) {
    const told = await tellable(services.pool, view.workspace, {
      ...row,
      tenant_id: view.workspace.id,
      user_id: view.member.id,
      sandbox: false,
    });
    if (!told) continue;
    count += 1;
    if (lines.length < limit)
      lines.push(
        html`<li>
          <a href="${recordPath(view.workspace, row)}">${toldLine(told, zone)}</a> · ${when(row.happened_at, zone)}
        </li>`,
      );
  }
  return { total: latest.length === READ_AT_MOST && count === READ_AT_MOST ? '100+' : String(count), lines };
}

async function notificationsPage(services: AppServices, view: MemberView, done?: 'saved' | 'seen') {
  const settings = await settingsOf(services.pool, view.workspace.id, view.member.id);
  const now = services.now();
  const { total, lines } = await newForMe(services, view);
  const box = (name: string, checked: boolean, label: string, hint: string) =>
    html`<div>
      <input
        type="checkbox"
        id="f-${name}"
        name="${name}"
        value="on"
        ${checked ? 'checked' : ''}
        aria-describedby="f-${name}-hint"
      />
      <label for="f-${name}" class="inline">${label}</label>
      <p class="hint" id="f-${name}-hint">${hint}</p>
    </div>`;
  return page(
    view.frame('My notifications', 'Today'),
    html`${done === 'saved' ? notice('Saved: your notification emails follow your new choice.') : ''}
      ${done === 'seen' ? notice('Marked as seen: Today no longer counts them.') : ''}
      <section aria-labelledby="new">
        <h2 id="new">New for me <span class="count">(${total})</span></h2>
        ${
          lines.length === 0
            ? html`<p>Nothing new for you.</p>`
            : html`<ul class="lines">
                ${lines}
              </ul>`
        }
        ${
          total !== '0'
            ? html`<form method="post" action="${path(view)}/seen">
                ${csrfField(view.signedIn.csrf)}
                <input type="hidden" name="shown_at" value="${now.toISOString()}" />
                <button type="submit">Mark these as seen</button>
              </form>`
            : ''
        }
      </section>
      <section aria-labelledby="email">
        <h2 id="email">Email from ${view.workspace.name}</h2>
        <p>
          You hear about leads and tasks assigned to you, your tasks gone overdue and your follow-ups falling
          due${can(view.role, 'webhooks.resume') ? ', and paused webhook endpoints' : ''}. Emails go to
          ${view.member.email}.
        </p>
        <form method="post" action="${path(view)}">
          ${csrfField(view.signedIn.csrf)}
          <fieldset>
            <legend>Send me</legend>
            ${box('at_once', settings.atOnce, 'An email for each, at once', 'As soon as it happens.')}
            ${box('digest', settings.digest, 'A daily digest', `Each morning at 08:00 in ${timeZoneOf(view.workspace)}, what came since the last one.`)}
          </fieldset>
          <button type="submit">Save my choice</button>
        </form>
      </section>`,
  );
}

async function unsubscribeTarget(services: AppServices, params: { slug: string; member: string; token: string }) {
  const workspace = await findWorkspace(services.pool, params.slug);
  const valid =
    workspace !== undefined && (await unsubscribeTokenHolds(services.pool, params.token, workspace.id, params.member));
  if (!workspace || !valid)
    throw new ConsoleRefusal(404, 'This unsubscribe link is not valid. Sign in to choose which emails you get.');
  return workspace;
}

/** A member's notifications: what is new for them, and how they are emailed; and the unsubscribe link's pages. */
export function registerNotificationPages(app: TypedApp, services: AppServices): void {
  app.get(
    '/w/:slug/notifications',
    { schema: { params: SlugParams, querystring: Query }, config: { console: { operation: 'workspace.view' } } },
    async (request, reply) => sendPage(reply, await notificationsPage(services, viewOf(request), request.query.done)),
  );
  app.post(
    '/w/:slug/notifications',
    { schema: { params: SlugParams, body: SettingsBody }, config: { console: { operation: 'workspace.view' } } },
    async (request, reply) => {
      const view = viewOf(request);
      const settings = { atOnce: request.body.at_once === 'on', digest: request.body.digest === 'on' };
      await saveSettings(services.pool, view.workspace.id, view.member.id, settings, services.now());
      return reply.redirect(`${path(view)}?done=saved`, 303);
    },
  );
  app.post(
    '/w/:slug/notifications/seen',
    { schema: { params: SlugParams, body: SeenBody }, config: { console: { operation: 'workspace.view' } } },
    async (request, reply) => {
      const view = viewOf(request);
      await markSeen(services.pool, view.workspace.id, view.member.id, new Date(request.body.shown_at), services.now());
      return reply.redirect(`${path(view)}?done=seen`, 303);
    },
  );

  // The link in every notification mail: no sign-in, and it does one thing. GET only asks (a mail client or scanner
  // that fetches links must not unsubscribe anyone); POST does it, from the page's form or a one-click client.
  app.get(
    '/unsubscribe/:slug/:member/:token',
    { schema: { params: UnsubscribeParams }, config: { console: 'open' } },
    async (request, reply) => {
      const workspace = await unsubscribeTarget(services, request.params);
      return sendPage(
        reply,
        page(
          frameOf(request, 'Stop notification emails'),
          html`<p>
              Stop every notification email from ${workspace.name} to this member? What is new for you still shows on
              Today when you sign in, and you can turn emails back on there.
            </p>
            <form method="post" action="${request.url}">
              <input type="hidden" name="confirm" value="yes" />
              <button type="submit">Stop these emails</button>
            </form>`,
        ),
      );
    },
  );
  app.post(
    '/unsubscribe/:slug/:member/:token',
    { schema: { params: UnsubscribeParams, body: UnsubscribeBody }, config: { console: 'open' } },
    async (request, reply) => {
      const workspace = await unsubscribeTarget(services, request.params);
      if (request.body.confirm !== 'yes' && request.body['List-Unsubscribe'] !== 'One-Click')
        throw new ConsoleRefusal(400, 'Nothing was done: use the button on the page the link opens.');
      await unsubscribe(services.pool, workspace.id, request.params.member, services.now());
      return sendPage(
        reply,
        page(
          frameOf(request, 'Notification emails stopped'),
          html`${notice(`Done: no more notification emails from ${workspace.name}.`)}
            <p>
              To get them again, sign in and open
              <a href="/console/w/${workspace.slug}/notifications">My notifications</a>.
            </p>`,
        ),
      );
    },
  );
}
