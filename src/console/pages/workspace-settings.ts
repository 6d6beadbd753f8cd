import { Type } from 'typebox';
import type { AppServices } from '../../bootstrap.js';
import type { TypedApp } from '../../http/typed-app.js';
import { credentialedEmails } from '../../identity/members.js';
import { setWorkspaceTimeZone } from '../../workspaces/repository.js';
import { AUTO_ASSIGNMENT_RULE, passedOverForLeads } from '../assignment-words.js';
import { sendPage, type MemberView } from '../context.js';
import { html } from '../html.js';
import { choice, csrfField, notice, page } from '../layout.js';
import { viewOf } from '../routes.js';
import { isTimeZone, timeZoneOf, timeZones, when } from '../time.js';

// Declared here until src/console/schemas.ts (the shared field schemas) is on this branch.
const Params = Type.Object({ slug: Type.String({ pattern: '^[a-z0-9][a-z0-9-]{1,62}$' }) });
const Query = Type.Object({ saved: Type.Optional(Type.Literal('time_zone')) });
const Body = Type.Object({
  _csrf: Type.String({ maxLength: 200 }),
  time_zone: Type.String({ maxLength: 64 }),
});

const settingsPath = (view: MemberView) => `/console/w/${view.workspace.slug}/settings`;

async function settingsPage(
  services: AppServices,
  view: MemberView,
  o: { saved?: boolean; error?: string; value?: string },
) {
  const zone = timeZoneOf(view.workspace);
  const users = view.workspace.settings.users;
  const canSignIn = await credentialedEmails(
    services.pool,
    users.map((u) => u.email),
  );
  const passedOver = users.filter((u) => passedOverForLeads(u, users, canSignIn));
  return page(
    view.frame('Workspace settings', 'Settings'),
    html`${o.saved ? notice(`Saved: times are now shown and read in ${zone}.`) : ''}
      <section aria-labelledby="zone">
        <h2 id="zone">Time zone</h2>
        <p>
          Every time in the console is shown in this zone (the UTC time is on hover), and dates and times typed into
          forms (follow-ups, task due times) are read in it. It is now ${when(services.now(), zone)} there.
        </p>
        <form method="post" action="${settingsPath(view)}">
          ${csrfField(view.signedIn.csrf)}
          ${choice({
            name: 'time_zone',
            label: 'Time zone',
            options: timeZones().map((z) => [z, z.replaceAll('_', ' ')] as const),
            value: o.value ?? zone,
            error: o.error,
          })}
          <button type="submit">Save the time zone</button>
        </form>
      </section>
      <section aria-labelledby="assignment">
        <h2 id="assignment">Who gets new leads</h2>
        <p>${AUTO_ASSIGNMENT_RULE}</p>
        ${
          passedOver.length === 0
            ? html`<p>Every active member can be given new leads.</p>`
            : html`<p>Not given new leads now, until they can sign in:</p>
                <ul>
                  ${passedOver.map((u) => html`<li>${u.name} (${u.email}, ${u.role})</li>`)}
                </ul>`
        }
        <p><a href="/console/w/${view.workspace.slug}/members">Members</a> shows each member’s state.</p>
      </section>`,
  );
}

/** The workspace's settings page (owners and admins): its time zone. */
export function registerWorkspaceSettingsPages(app: TypedApp, services: AppServices): void {
  app.get(
    '/w/:slug/settings',
    { schema: { params: Params, querystring: Query }, config: { console: { operation: 'workspace.settings' } } },
    async (request, reply) =>
      sendPage(reply, await settingsPage(services, viewOf(request), { saved: request.query.saved === 'time_zone' })),
  );

  app.post(
    '/w/:slug/settings',
    { schema: { params: Params, body: Body }, config: { console: { operation: 'workspace.settings' } } },
    async (request, reply) => {
      const view = viewOf(request);
      const zone = request.body.time_zone;
      if (!isTimeZone(zone))
        return sendPage(
          reply,
          await settingsPage(services, view, { error: 'Choose a time zone from the list.', value: zone }),
          400,
        );
      await setWorkspaceTimeZone(services.pool, view.workspace.id, zone);
      return reply.redirect(`${settingsPath(view)}?saved=time_zone`, 303);
    },
  );
}
