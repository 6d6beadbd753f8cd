import type { FastifyRequest } from 'fastify';
import type { AppServices } from '../../bootstrap.js';
import type { TypedApp } from '../../http/typed-app.js';
import { createAccessToken, listAccessTokens, revokeAccessToken } from '../../identity/access-tokens.js';
import { findAccountByEmail, setPassword } from '../../identity/accounts.js';
import { membershipsOf } from '../../identity/members.js';
import { passkeysOf } from '../../identity/passkeys.js';
import { passwordMatches } from '../../identity/passwords.js';
import { IDENTITY_POLICY } from '../../identity/policy.js';
import { endEverySession, listSessions, startSession } from '../../identity/sessions.js';
import { secretHash } from '../../identity/secrets.js';
import {
  ConsoleRefusal,
  confirmRecentSignIn,
  formOf,
  frameOf,
  sendPage,
  SESSION_COOKIE,
  signedInOf,
  type SignedIn,
} from '../context.js';
import { html, type Html, table } from '../html.js';
import { csrfField, field, notice, page, select, signInAgain } from '../layout.js';
import { newPasswordFields, passwordProblem } from './auth.js';

const when = (d: Date | null) => (d ? d.toISOString().replace('T', ' ').slice(0, 16) + ' UTC' : '—');

async function accountPage(
  services: AppServices,
  request: FastifyRequest,
  signedIn: SignedIn,
  o: { errors?: Record<string, string>; message?: string; newToken?: string } = {},
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
    <form method="post" action="/console/account/password">
      ${csrfField(signedIn.csrf)}
      ${field({ name: 'current', label: 'Current password', type: 'password', required: true, autocomplete: 'current-password', error: errors.current })}
      ${newPasswordFields({ password: errors.new })}
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
  o: { errors?: Record<string, string>; newToken?: string },
  memberships: Awaited<ReturnType<typeof membershipsOf>>,
  tokens: Awaited<ReturnType<typeof listAccessTokens>>,
  passwordAgain: ReturnType<typeof signInAgain> | '',
) {
  const errors = o.errors ?? {};
  return html`<section aria-labelledby="pat">
    <h2 id="pat">Personal access tokens</h2>
    <p>For the admin HTTP interface: a token acts as you, in one workspace, with your role there.</p>
    ${
      o.newToken
        ? html`<div role="status">
            <p>Your new token, shown this once:</p>
            <p class="secret" id="new-token">${o.newToken}</p>
          </div>`
        : ''
    }
    <form method="post" action="/console/account/tokens">
      ${csrfField(signedIn.csrf)}
      ${select({ name: 'workspace', label: 'Workspace', options: memberships.map((m) => m.workspace.slug), error: errors.workspace })}
      ${field({ name: 'name', label: 'Name', value: 'admin interface', required: true, error: errors.name })}
      ${field({ name: 'days', label: 'Expires after (days)', type: 'number', value: '30', hint: 'From 1 to 365.', error: errors.days })}
      ${passwordAgain}
      <button type="submit">Create token</button>
    </form>
    ${tokensTable(signedIn, tokens)}
  </section>`;
}

export function registerAccountPages(app: TypedApp, services: AppServices): void {
  app.get('/', async (request, reply) => {
    if (!request.signedIn) return reply.redirect('/console/sign-in', 303);
    const memberships = await membershipsOf(services.pool, request.signedIn.session.email);
    return sendPage(
      reply,
      page(
        frameOf(request, 'Your workspaces', 'Workspaces'),
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
            </ul>`,
      ),
    );
  });

  app.get('/account', async (request, reply) => {
    const signedIn = signedInOf(request);
    return sendPage(reply, await accountPage(services, request, signedIn));
  });

  app.post('/account/password', async (request, reply) => {
    const signedIn = signedInOf(request);
    const form = formOf(request);
    const account = (await findAccountByEmail(services.pool, signedIn.session.email))!;
    if (!account.password_hash || !(await passwordMatches(account.password_hash, form.current ?? '')))
      return sendPage(
        reply,
        await accountPage(services, request, signedIn, { errors: { current: 'That is not your current password.' } }),
        400,
      );
    const problem = passwordProblem(form.password ?? '', form.confirm ?? '');
    if (problem)
      return sendPage(reply, await accountPage(services, request, signedIn, { errors: { new: problem } }), 400);
    await setPassword(services.pool, account.id, form.password!, services.now());
    // A new password ends every other session: this one goes on with a new id.
    await endEverySession(services.pool, account.id);
    const id = await startSession(services.pool, account.id, services.now(), request.headers['user-agent'] ?? '');
    reply.setCookie(SESSION_COOKIE, id, {
      path: '/console',
      httpOnly: true,
      sameSite: 'lax',
      secure: request.protocol === 'https',
    });
    return reply.redirect('/console/account', 303);
  });

  app.post('/account/sign-out-everywhere', async (request, reply) => {
    const signedIn = signedInOf(request);
    await endEverySession(services.pool, signedIn.session.account_id);
    reply.clearCookie(SESSION_COOKIE, { path: '/console' });
    return reply.redirect('/console/sign-in', 303);
  });

  app.post('/account/tokens', async (request, reply) => {
    const signedIn = signedInOf(request);
    const form = formOf(request);
    const refuse = async (errors: Record<string, string>) =>
      sendPage(reply, await accountPage(services, request, signedIn, { errors }), 400);
    const membership = (await membershipsOf(services.pool, signedIn.session.email)).find(
      (m) => m.workspace.slug === form.workspace,
    );
    if (!membership) return refuse({ workspace: 'Choose one of your workspaces.' });
    const days = Number(form.days);
    if (!Number.isInteger(days) || days < 1 || days > 365)
      return refuse({ days: 'Enter a whole number of days from 1 to 365.' });
    const name = (form.name ?? '').trim();
    if (!name || name.length > 100) return refuse({ name: 'Give the token a name of up to 100 characters.' });
    try {
      await confirmRecentSignIn(services, signedIn, form);
    } catch (error) {
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
    });
    return sendPage(
      reply,
      await accountPage(services, request, signedIn, { newToken: value, message: 'Token created.' }),
      201,
    );
  });

  app.post('/account/tokens/:id/revoke', async (request, reply) => {
    const signedIn = signedInOf(request);
    const id = (request.params as { id: string }).id;
    if (
      !/^[0-9a-f-]{36}$/.test(id) ||
      !(await revokeAccessToken(services.pool, signedIn.session.account_id, id, services.now()))
    )
      throw new ConsoleRefusal(404, 'No such token of yours.');
    return reply.redirect('/console/account', 303);
  });
}
