import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppServices } from '../../bootstrap.js';
import type { TypedApp } from '../../http/typed-app.js';
import { inviteMember } from '../../identity/invitations.js';
import { changeMembers, MemberRefusal, type MemberChange } from '../../identity/members.js';
import { ROLES, type Role } from '../../identity/permissions.js';
import {
  allow,
  allowRecent,
  ConsoleRefusal,
  formOf,
  memberView,
  needsPassword,
  sendPage,
  type MemberView,
} from '../context.js';
import { html, table } from '../html.js';
import { csrfField, field, notice, page, select, signInAgain } from '../layout.js';

async function membersPage(
  services: AppServices,
  request: FastifyRequest,
  view: MemberView,
  o: { errors?: Record<string, string>; message?: string; link?: string } = {},
): Promise<string> {
  allow(view, 'members.view');
  const errors = o.errors ?? {};
  const base = `/console/w/${view.workspace.slug}/members`;
  const csrf = csrfField(view.signedIn.csrf);
  const password = needsPassword(services, view.signedIn, 'members.change')
    ? signInAgain(view.signedIn.csrf, errors.password)
    : '';
  return page(
    view.frame('Members', 'Members'),
    html`${notice(o.message)}${o.link ? html`<p>No mail server is set, so give them this link yourself (it works once): <span class="secret">${o.link}</span></p>` : ''}
      ${errors.member ? notice(errors.member, 'alert') : ''}
      ${table({ caption: `Members of ${view.workspace.name}`, headings: ['Name', 'Email', 'Role', 'State', 'Change'], rows: view.workspace.settings.users.map((u) => memberRow(u, base, csrf, password)) })}
      <section aria-labelledby="invite">
        <h2 id="invite">Invite a member</h2>
        <form method="post" action="${base}/invite">
          ${csrf} ${field({ name: 'name', label: 'Name', required: true, error: errors.name })}
          ${field({ name: 'email', label: 'Email', type: 'email', required: true, error: errors.email })}
          ${select({ name: 'role', label: 'Role', options: ROLES, value: 'counsellor', error: errors.role })}
          ${password}
          <button type="submit">Send the invitation</button>
        </form>
      </section>`,
  );
}

/** One member, with the role and deactivation forms while they are active. */
function memberRow(
  u: MemberView['workspace']['settings']['users'][number],
  base: string,
  csrf: ReturnType<typeof csrfField>,
  password: ReturnType<typeof signInAgain> | '',
) {
  return html`<tr>
    <td>${u.name}</td>
    <td>${u.email}</td>
    <td>${u.role}</td>
    <td>${u.active ? 'active' : 'deactivated'}</td>
    <td>
      ${
        u.active
          ? html`<form method="post" action="${base}/${u.id}/role">
                ${csrf}
                <label for="role-${u.id}">Role of ${u.name}</label>
                <select id="role-${u.id}" name="role">
                  ${ROLES.map((r) => html`<option ${r === u.role ? html`selected` : ''}>${r}</option>`)}
                </select>
                ${password ? html`<label for="pw-${u.id}">Your password</label><input id="pw-${u.id}" name="password" type="password" autocomplete="current-password" />` : ''}
                <button type="submit">Change role</button>
              </form>
              <form method="post" action="${base}/${u.id}/deactivate">
                ${csrf}
                ${password ? html`<label for="pwd-${u.id}">Your password</label><input id="pwd-${u.id}" name="password" type="password" autocomplete="current-password" />` : ''}
                <button type="submit" class="danger">Deactivate ${u.name}</button>
              </form>`
          : ''
      }
    </td>
  </tr>`;
}

/** The operations a member change needs: owners are made, unmade, invited or deactivated by owners only. */
function checkChange(view: MemberView, change: MemberChange, targetRole: Role | undefined): void {
  allow(view, change.type === 'invite' ? 'members.invite' : 'members.change');
  const newRole = change.type === 'invite' || change.type === 'set_role' ? change.role : undefined;
  if (newRole === 'owner' || targetRole === 'owner') allow(view, 'members.manage_owners');
}

export function registerMemberPages(app: TypedApp, services: AppServices): void {
  app.get('/w/:slug/members', async (request, reply) => {
    const view = await memberView(services, request);
    return sendPage(reply, await membersPage(services, request, view));
  });

  /** Decides and makes a member change; the page again with the refusal in words, or back to the members. */
  async function change(
    request: FastifyRequest,
    reply: FastifyReply,
    build: (form: Record<string, string | undefined>) => MemberChange,
  ) {
    const view = await memberView(services, request);
    const form = formOf(request);
    const refuse = async (errors: Record<string, string>, status = 400) =>
      sendPage(reply, await membersPage(services, request, view, { errors }), status);
    const wanted = build(form);
    if ((wanted.type === 'invite' || wanted.type === 'set_role') && !(ROLES as readonly string[]).includes(wanted.role))
      return refuse({ role: 'Choose one of the roles.' });
    const target =
      wanted.type === 'invite' ? undefined : view.workspace.settings.users.find((u) => u.id === wanted.user_id);
    checkChange(view, wanted, target?.role);
    try {
      await allowRecent(services, view, wanted.type === 'invite' ? 'members.invite' : 'members.change', form);
      if (wanted.type === 'invite') {
        if (!/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(wanted.email)) return refuse({ email: 'Enter an email address.' });
        if (!wanted.name) return refuse({ name: 'Enter their name.' });
        const sent = await inviteMember(services, view.workspace, wanted);
        const fresh = await memberView(services, request);
        return sendPage(
          reply,
          await membersPage(services, request, fresh, {
            message: sent.mailed
              ? `An invitation is on its way to ${sent.member.email}.`
              : `${sent.member.email} is invited.`,
            link: sent.mailed ? undefined : sent.link,
          }),
          201,
        );
      }
      await changeMembers(services.pool, view.workspace.id, wanted, services.now());
    } catch (error) {
      if (error instanceof ConsoleRefusal && error.field) return refuse({ [error.field]: error.message }, error.status);
      if (error instanceof MemberRefusal)
        return refuse(
          { [error.field === 'role' || error.field === 'email' ? error.field : 'member']: error.message },
          409,
        );
      throw error;
    }
    return reply.redirect(`/console/w/${view.workspace.slug}/members`, 303);
  }

  app.post('/w/:slug/members/invite', async (request, reply) =>
    change(request, reply, (f) => ({
      type: 'invite',
      email: (f.email ?? '').trim().toLowerCase(),
      name: (f.name ?? '').trim(),
      role: f.role as Role,
    })),
  );
  app.post('/w/:slug/members/:id/role', async (request, reply) =>
    change(request, reply, (f) => ({
      type: 'set_role',
      user_id: (request.params as { id: string }).id,
      role: f.role as Role,
    })),
  );
  app.post('/w/:slug/members/:id/deactivate', async (request, reply) =>
    change(request, reply, () => ({ type: 'deactivate', user_id: (request.params as { id: string }).id })),
  );
}
