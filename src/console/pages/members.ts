import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type, type Static } from 'typebox';
import type { AppServices } from '../../bootstrap.js';
import type { TypedApp } from '../../http/typed-app.js';
import { inviteMember, sendInvitation, type InvitationSent } from '../../identity/invitations.js';
import {
  changeMembers,
  credentialedEmails,
  MemberRefusal,
  membersElsewhere,
  memberState,
  type MemberChange,
} from '../../identity/members.js';
import { passkeyResetRefusal, resetMemberPasskeys, setPasskeyRequirement } from '../../identity/passkey-requirement.js';
import { can, ROLES, type Operation, type Role } from '../../identity/permissions.js';
import { withTransaction } from '../../storage/postgres.js';
import { PASSKEY_REQUIREMENTS, type PasskeyRequirement, type WorkspaceUser } from '../../workspaces/workspace.js';
import { allow, ConsoleRefusal, confirmRecentSignIn, needsPassword, sendPage, type MemberView } from '../context.js';
import { html, type Html } from '../html.js';
import { renderList } from '../list/component.js';
import { MEMBERS, type MemberRow } from '../list/lists/members.js';
import type { ListSpec } from '../list/spec.js';
import { listQuerySchema, registerListExport } from '../list/routes.js';
import { viewOf } from '../routes.js';
import { AUTO_ASSIGNMENT_RULE, passedOverForLeads } from '../assignment-words.js';
import { choice, csrfField, field, notice, page, select, signInAgain } from '../layout.js';
import { confirmPage } from './confirm.js';

// Field schemas declared here until src/console/schemas.ts (the frame helper's) is on this branch.
const NoNul = (maxLength: number) => Type.String({ maxLength, pattern: '^[^\\u0000]*$' });
const Slug = Type.String({ pattern: '^[a-z0-9][a-z0-9-]{1,62}$' });
const Uuid = Type.String({ pattern: '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' });
const RoleField = Type.Union(ROLES.map((r) => Type.Literal(r)));
const Csrf = { _csrf: Type.Optional(NoNul(200)) };
const Password = { password: Type.Optional(NoNul(256)) };

const WorkspaceParams = Type.Object({ slug: Slug });
const MemberParams = Type.Object({ slug: Slug, id: Uuid });
/** What the list says after an action: a word the page turns into a sentence from the stored state (no echo). */
const DONE = ['invited', 'role', 'deactivated', 'reactivated', 'passkeys_reset', 'requirement', 'link_sent'] as const;
const ListQuery = listQuerySchema(MEMBERS, {
  done: Type.Optional(Type.Union(DONE.map((d) => Type.Literal(d)))),
  who: Type.Optional(Uuid),
});
const InviteBody = Type.Object({
  ...Csrf,
  ...Password,
  name: NoNul(200),
  email: NoNul(254),
  role: RoleField,
  branch: Type.Optional(NoNul(100)),
});
const RoleBody = Type.Object({ ...Csrf, ...Password, role: RoleField });
const ConfirmBody = Type.Object({ ...Csrf, ...Password });
const RequirementBody = Type.Object({
  ...Csrf,
  ...Password,
  passkeys_required: Type.Union(PASSKEY_REQUIREMENTS.map((r) => Type.Literal(r))),
});

const REQUIREMENT_WORDS: Record<PasskeyRequirement, string> = {
  none: 'No one: a password is enough',
  owners_and_admins: 'Owners and admins',
  everyone: 'Every member',
};

type Done = (typeof DONE)[number];

/** What the member in view may do to this user: owners are changed by owners only; nobody changes themselves here. */
function mayChange(view: MemberView, user: WorkspaceUser): boolean {
  if (!can(view.role, 'members.change')) return false;
  return user.role !== 'owner' || can(view.role, 'members.manage_owners');
}

/** The roles the member in view may give. */
function grantableRoles(view: MemberView): readonly Role[] {
  return can(view.role, 'members.manage_owners') ? ROLES : ROLES.filter((r) => r !== 'owner');
}

function doneSentence(done: Done | undefined, user: WorkspaceUser | undefined): string | undefined {
  if (!done) return undefined;
  const who = user?.name ?? 'The member';
  switch (done) {
    case 'invited':
      return `${who} is invited as ${user?.role ?? 'a member'}. They appear as “invited” until they accept.`;
    case 'role':
      return `${who} is now ${user?.role ?? 'in their new role'}. Their sessions ended and their tokens were revoked.`;
    case 'deactivated':
      return `${who} is deactivated: their sessions ended and their tokens for this workspace were revoked.`;
    case 'reactivated':
      return `${who} is active again. They sign in as before; their old tokens stay revoked.`;
    case 'passkeys_reset':
      return `${who}’s passkeys are removed and their sessions ended. They sign in with their password and register a new passkey.`;
    case 'requirement':
      return 'The passkey requirement is saved. It applies from each member’s next page.';
    case 'link_sent':
      return `${who}’s first sign-in link is on its way to ${user?.email ?? 'them'}.`;
  }
}

interface PageOptions {
  errors?: Record<string, string>;
  /** What the invite form was sent with, shown again beside its errors. */
  invite?: { name?: string; email?: string; role?: string; branch?: string };
  message?: string;
  sent?: InvitationSent;
}

/** The members list with what this page knows beyond the settings: each one's state, and the changes allowed. */
function memberList(services: AppServices, view: MemberView, people: People, base: string): ListSpec<MemberRow> {
  const anyChange = view.workspace.settings.users.some((u) => mayChange(view, u));
  const userOf = (row: MemberRow) => view.workspace.settings.users.find((u) => u.id === row.id) ?? row.user;
  const stateOf = (u: WorkspaceUser) => {
    const state = memberState(u, people.credentialed);
    // A member named by the workspace's file who never signed in: "invited" would say an invitation is out.
    return state === 'invited' && !u.pending ? 'not signed in yet' : state;
  };
  return {
    ...MEMBERS,
    title: `Members of ${view.workspace.name}`,
    columns: [
      ...MEMBERS.columns.slice(0, 3),
      {
        key: 'state',
        label: 'State',
        cell: (r) => {
          const u = userOf(r);
          // An invitee is no member yet (the note under the table says they get no leads); a member who cannot sign in is.
          const noLeads = !u.pending && passedOverForLeads(u, view.workspace.settings.users, people.credentialed);
          return html`${stateOf(u)}${noLeads ? html`<br /><span class="hint">gets no new leads until they can sign in</span>` : ''}`;
        },
        text: (r) => stateOf(userOf(r)),
      },
      ...MEMBERS.columns.slice(3),
      ...(anyChange
        ? [
            {
              key: 'change',
              label: 'Change',
              exported: false as const,
              cell: (r: MemberRow) =>
                mayChange(view, userOf(r)) ? memberActions(services, view, userOf(r), people, base) : '',
              text: () => '',
            },
          ]
        : []),
    ],
  };
}

async function membersPage(
  services: AppServices,
  view: MemberView,
  o: PageOptions = {},
  query: Record<string, string | undefined> = {},
): Promise<string> {
  const errors = o.errors ?? {};
  const users = view.workspace.settings.users;
  const emails = users.map((u) => u.email);
  const credentialed = await credentialedEmails(services.pool, emails);
  const people: People = { credentialed, elsewhere: await membersElsewhere(services.pool, emails, view.workspace.id) };
  const base = `/console/w/${view.workspace.slug}/members`;
  const list = await renderList(services, view, memberList(services, view, people, base), query);
  return page(
    view.frame('Members', 'Members'),
    html`${notice(o.message)}${o.sent ? sentNotice(o.sent) : ''} ${errors.member ? notice(errors.member, 'alert') : ''}
      ${list.body}
      <p class="hint">${AUTO_ASSIGNMENT_RULE}</p>
      ${can(view.role, 'members.invite') ? inviteForm(services, view, base, errors, o.invite ?? {}) : ''}
      ${can(view.role, 'members.require_passkeys') ? requirementForm(services, view, base, errors) : ''}`,
  );
}

/** What the page knows of each member's account beyond this workspace's list. */
interface People {
  /** Emails whose account can sign in. */
  credentialed: ReadonlySet<string>;
  /** Emails that are members of another workspace too. */
  elsewhere: ReadonlySet<string>;
}

function sentNotice(sent: InvitationSent): Html {
  if (!sent.mailed && sent.memberElsewhere)
    return html`${notice(
      `${sent.email} belongs to another workspace and has not set up their account yet, so no link is shown here: ` +
        'their own workspace sends their first one. Once they can sign in, invite them again and they accept on their ' +
        'workspace list.',
    )}`;
  if (sent.link)
    return html`<div role="status">
      <p>
        No mail server is set, so give ${sent.email} this link yourself. It works once, for seven days, and only to set
        up their new account:
      </p>
      <p class="secret" id="invitation-link">${sent.link}</p>
    </div>`;
  return html`${notice(
    sent.mailed
      ? `An invitation is on its way to ${sent.email}.`
      : `${sent.email} already has an account: they will see the invitation on their workspace list after signing in.`,
  )}`;
}

function passwordFor(services: AppServices, view: MemberView, operation: Operation, error?: string): Html | '' {
  return needsPassword(services, view.signedIn, operation) ? signInAgain(view.signedIn.csrf, error) : '';
}

function inviteForm(
  services: AppServices,
  view: MemberView,
  base: string,
  errors: Record<string, string>,
  v: NonNullable<PageOptions['invite']>,
): Html {
  const branches = view.workspace.settings.branches;
  return html`<section aria-labelledby="invite">
    <h2 id="invite">Invite a member</h2>
    <form method="post" action="${base}/invite">
      ${csrfField(view.signedIn.csrf)}
      ${field({ name: 'name', label: 'Name', required: true, value: v.name, error: errors.name })}
      ${field({ name: 'email', label: 'Email', type: 'email', required: true, value: v.email, error: errors.email })}
      ${select({ name: 'role', label: 'Role', options: grantableRoles(view), value: v.role ?? 'counsellor', error: errors.role })}
      ${choice({
        name: 'branch',
        label: 'Branch',
        options: branches.map((b) => [b.id, `${b.name} (${b.code})`] as const),
        value: v.branch ?? branches[0]?.id,
        error: errors.branch,
      })}
      ${passwordFor(services, view, 'members.invite', errors.password)}
      <button type="submit">Send the invitation</button>
    </form>
  </section>`;
}

function requirementForm(services: AppServices, view: MemberView, base: string, errors: Record<string, string>): Html {
  const current = view.workspace.settings.passkeys_required ?? 'none';
  return html`<section aria-labelledby="passkeys-required">
    <h2 id="passkeys-required">Passkeys at sign-in</h2>
    <p>
      Members in the roles chosen here reach this workspace only after signing in with a passkey. One without a passkey
      registers one right after their password, before anything else. A member who loses theirs asks an owner or admin
      to reset their passkeys here, then registers a new one. A requirement that covers you applies to you from your
      next page too.
    </p>
    <form method="post" action="${base}/passkeys-required">
      ${csrfField(view.signedIn.csrf)}
      <fieldset>
        <legend>Who must sign in with a passkey</legend>
        ${PASSKEY_REQUIREMENTS.map(
          (r) =>
            html`<div>
              <input
                type="radio"
                id="pkr-${r}"
                name="passkeys_required"
                value="${r}"
                ${r === current ? html`checked` : ''}
              />
              <label for="pkr-${r}">${REQUIREMENT_WORDS[r]}</label>
            </div>`,
        )}
      </fieldset>
      ${
        needsPassword(services, view.signedIn, 'members.require_passkeys')
          ? html`<div class="field${errors.requirement_password ? ' invalid' : ''}">
              <label for="pw-requirement">Your password (this asks for a recent sign-in)</label>
              <input
                id="pw-requirement"
                name="password"
                type="password"
                autocomplete="current-password"
                ${errors.requirement_password ? html`aria-invalid="true" aria-describedby="pw-requirement-error"` : ''}
              />
              ${errors.requirement_password ? html`<p class="error" id="pw-requirement-error">${errors.requirement_password}</p>` : ''}
            </div>`
          : ''
      }
      <button type="submit">Save the requirement</button>
    </form>
  </section>`;
}

/** A member who has never signed in (named by a definition file): their first link, sent by this workspace. */
function firstLinkForm(services: AppServices, view: MemberView, u: WorkspaceUser, base: string): Html | '' {
  if (!can(view.role, 'members.invite')) return '';
  return html`<form method="post" action="${base}/${u.id}/first-link">
    ${csrfField(view.signedIn.csrf)}
    ${needsPassword(services, view.signedIn, 'members.invite') ? passwordInline(services, view, `pwl-${u.id}`) : ''}
    <button type="submit">Send their first sign-in link<span class="visually-hidden"> to ${u.name}</span></button>
  </form>`;
}

/** Reset passkeys, where this workspace may (passkeyResetRefusal); else why not, in a few words. */
function resetPasskeysAction(u: WorkspaceUser, people: People, base: string): Html | '' {
  const email = u.email.toLowerCase();
  if (u.pending || !people.credentialed.has(email)) return '';
  if (people.elsewhere.has(email))
    return html` · <span>Passkeys shared with another workspace: the operator resets them</span>`;
  return html` ·
    <a href="${base}/${u.id}/reset-passkeys">Reset passkeys<span class="visually-hidden"> of ${u.name}</span></a>`;
}

function memberActions(services: AppServices, view: MemberView, u: WorkspaceUser, people: People, base: string): Html {
  const csrf = csrfField(view.signedIn.csrf);
  const neverSignedIn = !u.pending && !people.credentialed.has(u.email.toLowerCase());
  if (!u.active)
    return u.pending
      ? html`<span>Invite them again to renew the invitation</span>`
      : html`<form method="post" action="${base}/${u.id}/reactivate">
          ${csrf} ${passwordInline(services, view, `pwr-${u.id}`)}
          <button type="submit">Reactivate<span class="visually-hidden"> ${u.name}</span></button>
        </form>`;
  return html`<form method="post" action="${base}/${u.id}/role">
      ${csrf}
      <label for="role-${u.id}">Role of ${u.name}</label>
      <select id="role-${u.id}" name="role">
        ${grantableRoles(view).map((r) => html`<option ${r === u.role ? html`selected` : ''}>${r}</option>`)}
      </select>
      ${passwordInline(services, view, `pw-${u.id}`)}
      <button type="submit">Change role</button>
    </form>
    ${neverSignedIn ? firstLinkForm(services, view, u, base) : ''}
    <p>
      <a href="${base}/${u.id}/deactivate">Deactivate<span class="visually-hidden"> ${u.name}</span></a>
      ${resetPasskeysAction(u, people, base)}
    </p>`;
}

function passwordInline(services: AppServices, view: MemberView, id: string): Html | '' {
  return needsPassword(services, view.signedIn, 'members.change')
    ? html`<label for="${id}">Your password</label
        ><input id="${id}" name="password" type="password" autocomplete="current-password" />`
    : '';
}

/** The step before an action that is hard to undo: what it does, and the button (with the password when asked). */
function confirmMemberChange(
  services: AppServices,
  view: MemberView,
  o: { title: string; user: WorkspaceUser; action: string; explain: string; button: string; error?: string },
): string {
  const base = `/console/w/${view.workspace.slug}/members`;
  return confirmPage(view, {
    title: o.title,
    current: 'Members',
    consequence: o.explain,
    action: `${base}/${o.user.id}/${o.action}`,
    inputs: passwordFor(services, view, 'members.change', o.error),
    button: o.button,
    back: base,
  });
}

type MemberParamsT = Static<typeof MemberParams>;

export function registerMemberPages(app: TypedApp, services: AppServices): void {
  registerListExport(app, services, MEMBERS);
  const listOf = (view: MemberView) => `/console/w/${view.workspace.slug}/members`;
  const userOf = (view: MemberView, id: string) => view.workspace.settings.users.find((u) => u.id === id);

  /** The user a member action names, if the member in view may change them; else a refusal in words. */
  function target(view: MemberView, params: MemberParamsT): WorkspaceUser {
    const user = userOf(view, params.id);
    if (!user) throw new ConsoleRefusal(404, 'No such member in this workspace.');
    // An owner is changed by owners only: a check the route's operation cannot declare, as it depends on the member.
    if (user.role === 'owner') allow(view, 'members.manage_owners');
    return user;
  }

  /** Asks for the recent sign-in, makes the change, and goes back to the list saying what happened. */
  async function change(
    request: FastifyRequest,
    reply: FastifyReply,
    body: Record<string, string | undefined>,
    wanted: MemberChange | (() => Promise<void>),
    done: Done,
    who: string | undefined,
    again: (errors: Record<string, string>) => Promise<string>,
  ) {
    const view = viewOf(request);
    try {
      await confirmRecentSignIn(services, view.signedIn, body);
      if (typeof wanted === 'function') await wanted();
      else await changeMembers(services.pool, view.workspace.id, wanted, services.now());
    } catch (error) {
      if (error instanceof ConsoleRefusal && error.field)
        return sendPage(reply, await again({ [error.field]: error.message }), error.status);
      if (error instanceof MemberRefusal) return sendPage(reply, await again({ member: error.message }), 409);
      throw error;
    }
    const query = new URLSearchParams({ done, ...(who ? { who } : {}) });
    return reply.redirect(`${listOf(view)}?${query}`, 303);
  }

  app.get(
    '/w/:slug/members',
    { schema: { params: WorkspaceParams, querystring: ListQuery }, config: { console: { operation: 'members.view' } } },
    async (request, reply) => {
      const view = viewOf(request);
      const { done, who } = request.query;
      const message = doneSentence(done, who ? userOf(view, who) : undefined);
      return sendPage(reply, await membersPage(services, view, { message }, request.query as Record<string, string>));
    },
  );

  app.post(
    '/w/:slug/members/invite',
    { schema: { params: WorkspaceParams, body: InviteBody }, config: { console: { operation: 'members.invite' } } },
    async (request, reply) => {
      const view = viewOf(request);
      const body = request.body;
      const again = (errors: Record<string, string>) =>
        membersPage(services, view, {
          errors,
          invite: { name: body.name, email: body.email, role: body.role, branch: body.branch },
        });
      const email = body.email.trim().toLowerCase();
      const name = body.name.trim();
      const branch = body.branch ?? view.workspace.settings.branches[0]?.id;
      if (!view.workspace.settings.branches.some((b) => b.id === branch))
        return sendPage(reply, await again({ branch: 'Choose a branch from the list.' }), 400);
      if (body.role === 'owner') allow(view, 'members.manage_owners');
      if (!/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email))
        return sendPage(reply, await again({ email: 'Enter an email address.' }), 400);
      if (!name) return sendPage(reply, await again({ name: 'Enter their name.' }), 400);
      let invited: Awaited<ReturnType<typeof inviteMember>>;
      try {
        await confirmRecentSignIn(services, view.signedIn, body);
        invited = await inviteMember(services, view.workspace, { email, name, role: body.role, branch_id: branch });
      } catch (error) {
        if (error instanceof ConsoleRefusal && error.field)
          return sendPage(reply, await again({ [error.field]: error.message }), error.status);
        if (error instanceof MemberRefusal)
          return sendPage(reply, await again({ [error.field === 'email' ? 'email' : 'member']: error.message }), 409);
        throw error;
      }
      // A link to hand over, or why none is, is shown on this answer only (it is nowhere else); else back to the list.
      if (!invited.sent.link && !(invited.sent.memberElsewhere && !invited.sent.mailed))
        return reply.redirect(
          `${listOf(view)}?${new URLSearchParams({ done: 'invited', who: invited.member.id })}`,
          303,
        );
      const fresh = {
        ...view,
        workspace: {
          ...view.workspace,
          settings: {
            ...view.workspace.settings,
            users: [...view.workspace.settings.users.filter((u) => u.id !== invited.member.id), invited.member],
          },
        },
      };
      return sendPage(reply, await membersPage(services, fresh, { sent: invited.sent }), 201);
    },
  );

  app.post(
    '/w/:slug/members/:id/role',
    { schema: { params: MemberParams, body: RoleBody }, config: { console: { operation: 'members.change' } } },
    async (request, reply) => {
      const view = viewOf(request);
      // Making an owner is the owners' own operation (it depends on the form, so it is checked here).
      if (request.body.role === 'owner') allow(view, 'members.manage_owners');
      const user = target(view, request.params);
      const again = (errors: Record<string, string>) => membersPage(services, view, { errors });
      return change(
        request,
        reply,
        request.body,
        { type: 'set_role', user_id: user.id, role: request.body.role },
        'role',
        user.id,
        (errors) => again({ member: errors.password ?? errors.member ?? '' }),
      );
    },
  );

  /**
   * An action on a member that is hard to undo: a GET that asks first, and the POST that does it and goes back to the
   * list saying so; a wrong password asks again on the same page, any other refusal shows on the list.
   */
  function confirmedChange(
    action: string,
    ask: (view: MemberView, user: WorkspaceUser) => { title: string; explain: string; button: string },
    wanted: (view: MemberView, user: WorkspaceUser) => MemberChange | (() => Promise<void>),
    done: Done,
    /** Why the action is not open for this user, said before anything is asked (the POST decides again). */
    refusal: (view: MemberView, user: WorkspaceUser) => Promise<string | undefined> = async () => undefined,
  ) {
    const asking = (view: MemberView, user: WorkspaceUser, error?: string) =>
      confirmMemberChange(services, view, { ...ask(view, user), user, action, error });
    app.get(
      `/w/:slug/members/:id/${action}`,
      { schema: { params: MemberParams }, config: { console: { operation: 'members.change' } } },
      async (request, reply) => {
        const view = viewOf(request);
        const user = target(view, request.params);
        const refused = await refusal(view, user);
        if (refused) return sendPage(reply, await membersPage(services, view, { errors: { member: refused } }), 409);
        return sendPage(reply, asking(view, user));
      },
    );
    app.post(
      `/w/:slug/members/:id/${action}`,
      { schema: { params: MemberParams, body: ConfirmBody }, config: { console: { operation: 'members.change' } } },
      async (request, reply) => {
        const view = viewOf(request);
        const user = target(view, request.params);
        return change(request, reply, request.body, wanted(view, user), done, user.id, async (errors) =>
          errors.password ? asking(view, user, errors.password) : membersPage(services, view, { errors }),
        );
      },
    );
  }

  confirmedChange(
    'deactivate',
    (view, user) => ({
      title: `Deactivate ${user.name}?`,
      explain: `${user.name} (${user.email}) will be signed out at once and their tokens for ${view.workspace.name} revoked. Their records stay. You can reactivate them later from the members list.`,
      button: `Deactivate ${user.name}`,
    }),
    (_view, user) => ({ type: 'deactivate', user_id: user.id }),
    'deactivated',
  );

  confirmedChange(
    'reset-passkeys',
    (_view, user) => ({
      title: `Reset the passkeys of ${user.name}?`,
      explain: `Every passkey of ${user.email} is removed (in every workspace of their account) and they are signed out. They sign in with their password and register a new passkey. Do this when they lost theirs, after making sure it is them who asks.`,
      button: `Reset the passkeys of ${user.name}`,
    }),
    (view, user) => async () => {
      await withTransaction(services.pool, (sql) => resetMemberPasskeys(sql, view.workspace, user));
    },
    'passkeys_reset',
    (view, user) => passkeyResetRefusal(services.pool, view.workspace, user),
  );

  app.post(
    '/w/:slug/members/:id/first-link',
    { schema: { params: MemberParams, body: ConfirmBody }, config: { console: { operation: 'members.invite' } } },
    async (request, reply) => {
      const view = viewOf(request);
      const user = target(view, request.params);
      const again = (errors: Record<string, string>) => membersPage(services, view, { errors });
      const credentialed = await credentialedEmails(services.pool, [user.email]);
      if (!user.active || user.pending || credentialed.has(user.email.toLowerCase()))
        return sendPage(
          reply,
          await again({ member: `${user.name} is not a member who has yet to sign in: nothing was sent.` }),
          409,
        );
      let sent: InvitationSent;
      try {
        await confirmRecentSignIn(services, view.signedIn, request.body);
        sent = await sendInvitation(services, view.workspace, user);
      } catch (error) {
        if (error instanceof ConsoleRefusal && error.field)
          return sendPage(reply, await again({ member: error.message }), error.status);
        throw error;
      }
      if (!sent.mailed) return sendPage(reply, await membersPage(services, view, { sent }), 201);
      return reply.redirect(`${listOf(view)}?${new URLSearchParams({ done: 'link_sent', who: user.id })}`, 303);
    },
  );

  app.post(
    '/w/:slug/members/:id/reactivate',
    { schema: { params: MemberParams, body: ConfirmBody }, config: { console: { operation: 'members.change' } } },
    async (request, reply) => {
      const view = viewOf(request);
      const user = target(view, request.params);
      return change(
        request,
        reply,
        request.body,
        { type: 'reactivate', user_id: user.id },
        'reactivated',
        user.id,
        (errors) => membersPage(services, view, { errors: { member: errors.password ?? errors.member ?? '' } }),
      );
    },
  );

  app.post(
    '/w/:slug/members/passkeys-required',
    {
      schema: { params: WorkspaceParams, body: RequirementBody },
      config: { console: { operation: 'members.require_passkeys' } },
    },
    async (request, reply) => {
      const view = viewOf(request);
      const requirement = request.body.passkeys_required;
      return change(
        request,
        reply,
        request.body,
        () => setPasskeyRequirement(services.pool, view.workspace.id, requirement, services.now()),
        'requirement',
        undefined,
        (errors) => membersPage(services, view, { errors: { requirement_password: errors.password ?? '' } }),
      );
    },
  );
}
