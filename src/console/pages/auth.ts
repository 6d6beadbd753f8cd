import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppServices } from '../../bootstrap.js';
import { failureAddress } from '../../http/auth.js';
import type { TypedApp } from '../../http/typed-app.js';
import { findAccount } from '../../identity/accounts.js';
import { completeWithPassword, isUsableOneTimeToken, requestPasswordReset } from '../../identity/invitations.js';
import { membershipsOf } from '../../identity/members.js';
import type { OneTimePurpose } from '../../identity/one-time-tokens.js';
import { IDENTITY_POLICY } from '../../identity/policy.js';
import { endSession, startSession } from '../../identity/sessions.js';
import { SIGN_IN_REFUSED, signInWithPassword } from '../../identity/sign-in.js';
import { frameOf, formOf, sendPage, SESSION_COOKIE } from '../context.js';
import { html } from '../html.js';
import { field, notice, page } from '../layout.js';
import { registerInvitationPages } from './invitations.js';

/** Starts a session for the account: always a new id (an id from before sign-in is ended, never kept). */
export async function signIn(
  services: AppServices,
  request: FastifyRequest,
  reply: FastifyReply,
  accountId: string,
  byPasskey = false,
): Promise<void> {
  const previous = request.cookies[SESSION_COOKIE];
  if (previous) await endSession(services.pool, previous);
  const userAgent = request.headers['user-agent'] ?? '';
  const id = await startSession(services.pool, accountId, services.now(), userAgent, null, byPasskey);
  reply.setCookie(SESSION_COOKIE, id, {
    path: '/console',
    httpOnly: true,
    sameSite: 'lax',
    secure: request.protocol === 'https',
  });
}

function signInPage(request: FastifyRequest, o: { email?: string; message?: string } = {}): string {
  return page(
    frameOf(request, 'Sign in'),
    html`${notice(o.message, 'alert')}
      <form method="post" action="/console/sign-in" novalidate>
        ${field({ name: 'email', label: 'Email', type: 'email', value: o.email, required: true, autocomplete: 'username' })}
        ${field({ name: 'password', label: 'Password', type: 'password', required: true, autocomplete: 'current-password' })}
        <button type="submit">Sign in</button>
      </form>
      <p><a href="/console/forgot">Forgot your password?</a></p>
      <section aria-labelledby="pk">
        <h2 id="pk">Or with a passkey</h2>
        <button type="button" id="passkey-sign-in">Sign in with a passkey</button>
        <p id="passkey-status" role="status"></p>
      </section>`,
  );
}

function passwordProblem(password: string, confirm: string): string | undefined {
  if (password.length < IDENTITY_POLICY.minPasswordLength)
    return `Choose a password of at least ${IDENTITY_POLICY.minPasswordLength} characters.`;
  if (password.length > 256) return 'Choose a password of at most 256 characters.';
  if (password !== confirm) return 'The two passwords are not the same.';
  return undefined;
}

export function newPasswordFields(errors: { password?: string } = {}) {
  return html`${field({ name: 'password', label: 'New password', type: 'password', required: true, autocomplete: 'new-password', hint: `At least ${IDENTITY_POLICY.minPasswordLength} characters.`, error: errors.password })}
  ${field({ name: 'confirm', label: 'New password again', type: 'password', required: true, autocomplete: 'new-password' })}`;
}

export { passwordProblem };

export function registerAuthPages(app: TypedApp, services: AppServices): void {
  app.get('/sign-in', async (request, reply) => {
    if (request.signedIn) return reply.redirect('/console', 303);
    return sendPage(reply, signInPage(request));
  });

  app.post('/sign-in', async (request, reply) => {
    const form = formOf(request);
    const email = (form.email ?? '').trim().toLowerCase();
    const result = await signInWithPassword(
      { sql: services.pool, rateLimits: services.rateLimits },
      { email, password: form.password ?? '', address: failureAddress(request.ip) },
    );
    switch (result.type) {
      case 'signed_in':
        await signIn(services, request, reply, result.account.id);
        return reply.redirect('/console', 303);
      case 'refused':
        return sendPage(reply, signInPage(request, { email, message: SIGN_IN_REFUSED }), 401);
      case 'throttled':
        return sendPage(
          reply,
          signInPage(request, {
            email,
            message: `Too many failed sign-ins; try again in ${Math.ceil(result.retryAfterSeconds / 60)} minute(s).`,
          }),
          429,
        );
    }
  });

  app.post('/sign-out', async (request, reply) => {
    if (request.signedIn) await endSession(services.pool, request.signedIn.sessionId);
    reply.clearCookie(SESSION_COOKIE, { path: '/console' });
    return reply.redirect('/console/sign-in', 303);
  });

  app.get('/forgot', async (request, reply) =>
    sendPage(
      reply,
      page(
        frameOf(request, 'Reset your password'),
        html`<form method="post" action="/console/forgot">
          ${field({ name: 'email', label: 'Email', type: 'email', required: true, autocomplete: 'username' })}
          <button type="submit">Send me a link</button>
        </form>`,
      ),
    ),
  );

  app.post('/forgot', async (request, reply) => {
    const email = (formOf(request).email ?? '').trim().toLowerCase();
    if (email) await requestPasswordReset(services, email);
    return sendPage(
      reply,
      page(
        frameOf(request, 'Reset your password'),
        html`${notice('If this email belongs to a member, a link to choose a new password is on its way. It works once, for 30 minutes.')}`,
      ),
    );
  });

  for (const [path, purpose, title] of [['/reset/:token', 'password_reset', 'Choose a new password']] as const)
    registerOneTimePage(app, services, path, purpose, title);
  // Invitations have pages of their own: a link sets up a new account only (src/console/pages/invitations.ts).
  registerInvitationPages(app, services);
}

function registerOneTimePage(
  app: TypedApp,
  services: AppServices,
  path: string,
  purpose: OneTimePurpose,
  title: string,
): void {
  const form = (request: FastifyRequest, token: string, errors: { password?: string } = {}) =>
    page(
      frameOf(request, title),
      html`<form method="post" action="/console${path.replace(':token', encodeURIComponent(token))}">
        ${newPasswordFields(errors)}
        <button type="submit">Set my password and sign in</button>
      </form>`,
    );
  const spent = (request: FastifyRequest) =>
    page(
      frameOf(request, title),
      html`${notice('This link has been used or has expired. Ask for a new one.', 'alert')}
        <p><a href="/console/forgot">Reset your password</a></p>`,
    );

  app.get(path, async (request, reply) => {
    const token = (request.params as { token: string }).token;
    if (!(await isUsableOneTimeToken(services, purpose, token))) return sendPage(reply, spent(request), 410);
    return sendPage(reply, form(request, token));
  });

  app.post(path, async (request, reply) => {
    const token = (request.params as { token: string }).token;
    const body = formOf(request);
    const problem = passwordProblem(body.password ?? '', body.confirm ?? '');
    if (problem) {
      if (!(await isUsableOneTimeToken(services, purpose, token))) return sendPage(reply, spent(request), 410);
      return sendPage(reply, form(request, token, { password: problem }), 400);
    }
    const accountId = await completeWithPassword(services, purpose, token, body.password!);
    if (!accountId) return sendPage(reply, spent(request), 410);
    const account = await findAccount(services.pool, accountId);
    if (account && (await membershipsOf(services.pool, account.email)).length === 0)
      return sendPage(reply, spent(request), 410);
    await signIn(services, request, reply, accountId);
    return reply.redirect('/console', 303);
  });
}
