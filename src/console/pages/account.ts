import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { AppServices } from '../../bootstrap.js';
import type { TypedApp } from '../../http/typed-app.js';
import { keepOneTimeSecret } from '../one-time-secret.js';
import {
  createAccessToken,
  listAccessTokens,
  revokeAccessToken,
  revokeEveryAccessToken,
} from '../../identity/access-tokens.js';
import { findAccountByEmail, setPassword } from '../../identity/accounts.js';
import { membershipsOf, pendingInvitationsOf } from '../../identity/members.js';
import { newPasswordProblem } from '../../identity/new-password.js';
import { passkeyRequired } from '../../identity/passkey-requirement.js';
import { passkeysOf } from '../../identity/passkeys.js';
import { IDENTITY_POLICY } from '../../identity/policy.js';
import { endEverySession, listSessions, signOutEverywhere } from '../../identity/sessions.js';
import { secretHash } from '../../identity/secrets.js';
import { withTransaction } from '../../storage/postgres.js';
import {
  ConsoleRefusal,
  confirmRecentSignIn,
  frameOf,
  reenterPassword,
  sendPage,
  SESSION_COOKIE,
  signedInOf,
  SignedOutRefusal,
  type SignedIn,
} from '../context.js';
import { html, type Html, table } from '../html.js';
import { when as inWorkspaceZone } from '../time.js';
import { choice, csrfField, field, notice, page, signInAgain } from '../layout.js';
import { newPasswordFields, signIn } from './auth.js';
import { answeredNotice, pendingInvitationsSection } from './invitations.js';
import { passkeyStepDue } from './passkeys.js';

const AnsweredSlug = Type.Optional(Type.String({ pattern: '^[a-z0-9][a-z0-9-]{1,62}$' }));
/** The workspace list after an invitation was answered (src/console/pages/invitations.ts answeredNotice). */
const AnsweredQuery = Type.Object({
  joined: AnsweredSlug,
  declined: AnsweredSlug,
  landing: Type.Optional(Type.Literal('1')),
});

/** A form's text: no NUL byte, at most `max` characters (inline until src/console/schemas.ts has its own). */
const text = (max: number) => Type.String({ maxLength: max, pattern: '^[^\\u0000]*$' });
const Csrf = { _csrf: Type.Optional(text(100)) };
const CsrfOnly = Type.Object(Csrf);
const PasswordChangeForm = Type.Object({
  ...Csrf,
  current: text(1024),
  password: text(1024),
  confirm: text(1024),
  /** The checkbox "revoke my tokens too", ticked by default: present when ticked. */
  revoke_tokens: Type.Optional(Type.Literal('on')),
});
const TokenForm = Type.Object({
  ...Csrf,
  workspace: text(100),
  name: text(1000),
  days: text(10),
  password: Type.Optional(text(1024)),
});
const TokenParams = Type.Object({ id: Type.String({ format: 'uuid' }) });
/** What the account page says was done, after a redirect (`?done=`). */
const DONE = {
  password: 'Your password was changed, and every other session of yours ended.',
  'password-and-tokens':
    'Your password was changed, every other session of yours ended and every personal access token of yours was revoked.',
} as const;
const AccountQuery = Type.Object({
  done: Type.Optional(Type.Union([Type.Literal('password'), Type.Literal('password-and-tokens')])),
});

/** The session ended for wrong passwords: the cookie goes, and the sign-in page says why. */
function signedOutForPasswords(reply: FastifyReply): FastifyReply {
  reply.clearCookie(SESSION_COOKIE, { path: '/console' });
  return reply.redirect('/console/sign-in?why=passwords', 303);
}

/** An account spans workspaces of different time zones, so its own page shows UTC, in the console's one format. */
const when = (d: Date | null) => inWorkspaceZone(d, 'UTC');

async function accountPage(
  services: AppServices,
  request: FastifyRequest,
  signedIn: SignedIn,
  o: { errors?: Record<string, string>; message?: string } = {},
): Promise<string> {
  const errors = o.errors ?? {};
  const account = (await findAccountByEmail(services.pool, signedIn.session.email))!;
  const sessions = await listSessions(services.pool, account.id);
  const memberships = await membershipsOf(services.pool, account.email);
  const tokens = await listAccessTokens(services.pool, account.id);
  const passkeys = await passkeysOf(services.pool, account.id);
  const recent =
    services.now().getTime() - signedIn.session.authenticated_at.getTime() <= IDENTITY_POLICY.recentSignInMs;
  const passwordAgain = recent ? '' : signInAgain(signedIn.csrf, errors.password);
  return page(
    frameOf(request, 'Your account', 'Account'),
    html`${notice(o.message)}
      <p>Signed in as <strong>${account.email}</strong>.</p>
      ${passwordSection(signedIn, errors)} ${passkeysSection(signedIn, passkeys)} ${sessionsSection(signedIn, sessions)}
      ${tokensSection(signedIn, o, memberships, tokens, passwordAgain)}`,
  );
}

function passwordSection(signedIn: SignedIn, errors: Record<string, string>) {
  return html`<section aria-labelledby="pw">
    <h2 id="pw">Password</h2>
    <p>Changing it ends every other session of yours; this one goes on.</p>
    <form method="post" action="/console/account/password">
      ${csrfField(signedIn.csrf)}
      ${field({ name: 'current', label: 'Current password', type: 'password', required: true, autocomplete: 'current-password', error: errors.current })}
      ${newPasswordFields({ password: errors.new })}
      <div>
        <input
          type="checkbox"
          id="f-revoke_tokens"
          name="revoke_tokens"
          value="on"
          checked
          aria-describedby="f-revoke_tokens-hint"
        />
        <label for="f-revoke_tokens" class="inline">Also revoke my personal access tokens</label>
        <p class="hint" id="f-revoke_tokens-hint">
          A token works until it expires or is revoked, whatever the password; leave this ticked if someone else may
          have known your password.
        </p>
      </div>
      <button type="submit">Change password</button>
    </form>
  </section>`;
}

function passkeysSection(signedIn: SignedIn, passkeys: Awaited<ReturnType<typeof passkeysOf>>) {
  return html`<section aria-labelledby="pks">
    <h2 id="pks">Passkeys</h2>
    <ul>
      ${passkeys.map(
        (p) =>
          html`<li>
            ${p.name}, last used ${when(p.last_used_at)}
            <form method="post" action="/console/passkeys/${p.credential_id}/remove">
              ${csrfField(signedIn.csrf)}<button type="submit" class="danger">
                Remove<span class="visually-hidden"> ${p.name}</span>
              </button>
            </form>
          </li>`,
      )}
    </ul>
    <button type="button" id="add-passkey" data-csrf="${signedIn.csrf}">Add a passkey</button>
    <p id="passkey-status" role="status"></p>
  </section>`;
}

/** Where the account is signed in, this browser marked. */
function sessionsSection(signedIn: SignedIn, sessions: Awaited<ReturnType<typeof listSessions>>) {
  const current = secretHash(signedIn.sessionId);
  return html`<section aria-labelledby="ss">
    <h2 id="ss">Sessions</h2>
    ${table({
      caption: 'Where you are signed in',
      headings: ['Signed in', 'Last used', 'Browser'],
      rows: sessions.map(
        (s) =>
          html`<tr>
            <td>${when(s.created_at)}${s.current_hash.equals(current) ? ' (this one)' : ''}</td>
            <td>${when(s.last_seen_at)}</td>
            <td>${s.user_agent.slice(0, 80)}</td>
          </tr>`,
      ),
    })}
    <form method="post" action="/console/account/sign-out-everywhere">
      ${csrfField(signedIn.csrf)}
      <p>Ends every session of yours, this one included, and revokes every personal access token you made.</p>
      <button type="submit" class="danger">Sign out everywhere</button>
    </form>
  </section>`;
}

/** The account's tokens, each revocable until revoked. */
function tokensTable(signedIn: SignedIn, tokens: Awaited<ReturnType<typeof listAccessTokens>>): Html {
  return table({
    caption: 'Your tokens',
    headings: ['Name', 'Ends in', 'Role', 'Last used', 'Expires', 'State'],
    rows: tokens.map(
      (t) =>
        html`<tr>
          <td>${t.name}</td>
          <td>…${t.last_four}</td>
          <td>${t.role}</td>
          <td>${when(t.last_used_at)}</td>
          <td>${when(t.expires_at)}</td>
          <td>
            ${
              t.revoked_at
                ? 'revoked'
                : html`<form method="post" action="/console/account/tokens/${t.id}/revoke">
                    ${csrfField(signedIn.csrf)}<button
                      type="submit"
                      class="danger"
                      aria-label="Revoke the token ${t.name} ending ${t.last_four}"
                    >
                      Revoke
                    </button>
                  </form>`
            }
          </td>
        </tr>`,
    ),
  });
}

/** The account's personal access tokens for the admin interface, and the form that creates one. */
function tokensSection(
  signedIn: SignedIn,
  o: { errors?: Record<string, string> },
  memberships: Awaited<ReturnType<typeof membershipsOf>>,
  tokens: Awaited<ReturnType<typeof listAccessTokens>>,
  passwordAgain: ReturnType<typeof signInAgain> | '',
) {
  const errors = o.errors ?? {};
  return html`<section aria-labelledby="pat">
    <h2 id="pat">Personal access tokens</h2>
    <p>
      For the admin HTTP interface: a token acts as you, in one workspace, with your role there. Resetting your password
      or signing out everywhere revokes every token; changing your password does unless you untick it.
    </p>
    <form method="post" action="/console/account/tokens">
      ${csrfField(signedIn.csrf)}
      ${choice({ name: 'workspace', label: 'Workspace', options: memberships.map((m) => [m.workspace.slug, m.workspace.name] as const), error: errors.workspace })}
      ${field({ name: 'name', label: 'Name', value: 'admin interface', required: true, error: errors.name })}
      ${field({ name: 'days', label: 'Expires after (days)', type: 'number', value: '30', hint: 'From 1 to 365.', error: errors.days })}
      ${passwordAgain}
      <button type="submit">Create token</button>
    </form>
    ${tokensTable(signedIn, tokens)}
  </section>`;
}

export function registerAccountPages(app: TypedApp, services: AppServices): void {
  app.get('/', { schema: { querystring: AnsweredQuery }, config: { console: 'open' } }, async (request, reply) => {
    if (!request.signedIn) return reply.redirect('/console/sign-in', 303);
    const email = request.signedIn.session.email;
    const memberships = await membershipsOf(services.pool, email);
    // Right after a password sign-in: a workspace that requires a passkey of this member asks for one first.
    if (await passkeyStepDue(services, request.signedIn, memberships))
      return reply.redirect('/console/passkeys/required', 303);
    // Right after a sign-in, a member of one workspace with no invitation to answer goes straight to its Today.
    const only = memberships.length === 1 ? memberships[0]! : undefined;
    if (request.query.landing && only && (await pendingInvitationsOf(services.pool, email)).length === 0)
      return reply.redirect(`/console/w/${only.workspace.slug}`, 303);
    const answered = await answeredNotice(services, email, request.query);
    return sendPage(
      reply,
      page(
        frameOf(request, 'Your workspaces', 'Workspaces'),
        html`${answered}
        ${
          memberships.length === 0
            ? html`<p>You are not a member of any workspace now.</p>`
            : html`<ul class="workspaces">
                ${memberships.map(
                  (m) =>
                    html`<li>
                      <a href="/console/w/${m.workspace.slug}">${m.workspace.name}</a>
                      <span class="role">(${m.user.role})</span>
                    </li>`,
                )}
              </ul>`
        }
        ${await pendingInvitationsSection(services, request.signedIn)}`,
      ),
    );
  });

  app.get(
    '/account',
    { schema: { querystring: AccountQuery }, config: { console: 'account' } },
    async (request, reply) => {
      const done = request.query.done;
      return sendPage(
        reply,
        await accountPage(services, request, signedInOf(request), { message: done ? DONE[done] : undefined }),
      );
    },
  );

  app.post(
    '/account/password',
    { schema: { body: PasswordChangeForm }, config: { console: 'account' } },
    async (request, reply) => {
      const signedIn = signedInOf(request);
      const form = request.body;
      const refuse = async (errors: Record<string, string>) =>
        sendPage(reply, await accountPage(services, request, signedIn, { errors }), 400);
      const accountId = signedIn.session.account_id;
      // The new password first: a refused one costs no attempt at the current password.
      const problem = await newPasswordProblem(services.pool, accountId, form.password, form.confirm);
      if (problem) return refuse({ new: problem });
      try {
        // The current password costs from the account's buckets as a sign-in does; past them the session ends.
        await reenterPassword(services, signedIn, form.current, {
          field: 'current',
          wrong: 'That is not your current password.',
        });
      } catch (error) {
        if (error instanceof SignedOutRefusal) return signedOutForPasswords(reply);
        if (error instanceof ConsoleRefusal && error.field) return refuse({ [error.field]: error.message });
        throw error;
      }
      const revokeTokens = form.revoke_tokens === 'on';
      await withTransaction(services.pool, async (sql) => {
        const now = services.now();
        // Setting it ends every reset link still out (a trigger, migration 0105).
        await setPassword(sql, accountId, form.password, now);
        await endEverySession(sql, accountId);
        if (revokeTokens) await revokeEveryAccessToken(sql, accountId, now);
      });
      // A new password ends every other session: this one goes on with a new id.
      await signIn(services, request, reply, accountId);
      return reply.redirect(`/console/account?done=${revokeTokens ? 'password-and-tokens' : 'password'}`, 303);
    },
  );

  app.post(
    '/account/sign-out-everywhere',
    { schema: { body: CsrfOnly }, config: { console: 'account' } },
    async (request, reply) => {
      const signedIn = signedInOf(request);
      await signOutEverywhere(services.pool, signedIn.session.account_id, services.now());
      reply.clearCookie(SESSION_COOKIE, { path: '/console' });
      return reply.redirect('/console/sign-in', 303);
    },
  );

  app.post(
    '/account/tokens',
    { schema: { body: TokenForm }, config: { console: 'account' } },
    async (request, reply) => {
      const signedIn = signedInOf(request);
      const form = request.body;
      const refuse = async (errors: Record<string, string>) =>
        sendPage(reply, await accountPage(services, request, signedIn, { errors }), 400);
      const membership = (await membershipsOf(services.pool, signedIn.session.email)).find(
        (m) => m.workspace.slug === form.workspace,
      );
      if (!membership) return refuse({ workspace: 'Choose one of your workspaces.' });
      // A token of a workspace that requires passkeys is made only from a session that used one.
      if (passkeyRequired(membership.workspace, membership.user.role) && !signedIn.session.passkey_at)
        return refuse({ workspace: `${membership.workspace.name} requires a passkey: sign in with yours first.` });
      const days = Number(form.days);
      if (!Number.isInteger(days) || days < 1 || days > 365)
        return refuse({ days: 'Enter a whole number of days from 1 to 365.' });
      const name = form.name.trim();
      if (!name || name.length > 100) return refuse({ name: 'Give the token a name of up to 100 characters.' });
      try {
        await confirmRecentSignIn(services, signedIn, { password: form.password });
      } catch (error) {
        if (error instanceof SignedOutRefusal) return signedOutForPasswords(reply);
        if (error instanceof ConsoleRefusal && error.field) return refuse({ [error.field]: error.message });
        throw error;
      }
      const now = services.now();
      const { value } = await createAccessToken(services.pool, {
        accountId: signedIn.session.account_id,
        tenantId: membership.workspace.id,
        role: membership.user.role,
        name,
        expiresAt: new Date(now.getTime() + days * 24 * 3600_000),
        now,
        madeWithPasskey: signedIn.session.passkey_at !== null,
      });
      const shown = await keepOneTimeSecret(
        services.pool,
        signedIn,
        {
          title: 'Your new token',
          lead: `The token “${name}” for ${membership.workspace.name} is created; it acts as you, with your role there.`,
          value,
          back: { href: '/console/account', label: 'Back to your account' },
        },
        now,
      );
      return reply.redirect(shown, 303);
    },
  );

  app.post(
    '/account/tokens/:id/revoke',
    { schema: { params: TokenParams, body: CsrfOnly }, config: { console: 'account' } },
    async (request, reply) => {
      const signedIn = signedInOf(request);
      if (!(await revokeAccessToken(services.pool, signedIn.session.account_id, request.params.id, services.now())))
        throw new ConsoleRefusal(404, 'No such token of yours.');
      return reply.redirect('/console/account', 303);
    },
  );
}
