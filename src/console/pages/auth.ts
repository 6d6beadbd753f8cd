import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { AppServices } from '../../bootstrap.js';
import { failureAddress } from '../../http/auth.js';
import type { TypedApp } from '../../http/typed-app.js';
import { findAccount } from '../../identity/accounts.js';
import { isUsableOneTimeToken } from '../../identity/invitations.js';
import { membershipsOf } from '../../identity/members.js';
import { newPasswordProblem } from '../../identity/new-password.js';
import { requestPasswordReset, resetPassword } from '../../identity/password-resets.js';
import { IDENTITY_POLICY } from '../../identity/policy.js';
import { endSession, startSession } from '../../identity/sessions.js';
import { checkPassword, rememberAddress, SIGN_IN_REFUSED } from '../../identity/sign-in.js';
import { frameOf, sendPage, SESSION_COOKIE, SIGNED_IN_LANDING, SIGNED_OUT_FOR_PASSWORDS } from '../context.js';
import { html } from '../html.js';
import { CsrfOnly } from '../schemas.js';
import { field, notice, page } from '../layout.js';
import { registerInvitationPages } from './invitations.js';

/** A form's text: no NUL byte, at most `max` characters (inline until src/console/schemas.ts has its own). */
const text = (max: number) => Type.String({ maxLength: max, pattern: '^[^\\u0000]*$' });
const SignInForm = Type.Object({ email: text(320), password: text(1024) });
const ForgotForm = Type.Object({ email: text(320) });
const NewPasswordForm = Type.Object({ password: text(1024), confirm: text(1024) });
const TokenParams = Type.Object({ token: Type.String({ pattern: '^[A-Za-z0-9_-]{1,100}$' }) });
/** Why the sign-in page is shown after a session ended, in words (`?why=`). */
const SIGNED_OUT_BECAUSE = { passwords: SIGNED_OUT_FOR_PASSWORDS } as const;
const SignInQuery = Type.Object({ why: Type.Optional(Type.Union([Type.Literal('passwords')])) });

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
  const address = failureAddress(request.ip);
  const now = services.now();
  // Every way in (password, passkey, reset, invitation) makes this address the account's own door (sign-in.ts).
  await rememberAddress(services.pool, accountId, address, now);
  const id = await startSession(
    services.pool,
    accountId,
    now,
    { userAgent: request.headers['user-agent'] ?? '', address },
    null,
    byPasskey,
  );
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

/** The refusal of a throttled password, in words: a stranger's failures elsewhere never lead here from your own door. */
export function throttledMessage(retryAfterSeconds: number, knownAddress: boolean): string {
  const wait = `Too many failed sign-ins; try again in ${Math.ceil(retryAfterSeconds / 60)} minute(s)`;
  return knownAddress
    ? `${wait}.`
    : `${wait}, or sign in with a passkey, or reset your password: this is not an address you signed in from before.`;
}

export function newPasswordFields(errors: { password?: string } = {}) {
  return html`${field({ name: 'password', label: 'New password', type: 'password', required: true, autocomplete: 'new-password', hint: `At least ${IDENTITY_POLICY.minPasswordLength} characters; no common, leaked or guessable ones (your email or your workspace’s name). A few unrelated words make a good one.`, error: errors.password })}
  ${field({ name: 'confirm', label: 'New password again', type: 'password', required: true, autocomplete: 'new-password' })}`;
}

export function registerAuthPages(app: TypedApp, services: AppServices): void {
  app.get('/sign-in', { schema: { querystring: SignInQuery }, config: { console: 'open' } }, async (request, reply) => {
    if (request.signedIn) return reply.redirect('/console', 303);
    const why = request.query.why;
    return sendPage(reply, signInPage(request, { message: why ? SIGNED_OUT_BECAUSE[why] : undefined }));
  });

  app.post('/sign-in', { schema: { body: SignInForm }, config: { console: 'open' } }, async (request, reply) => {
    const email = request.body.email.trim().toLowerCase();
    const result = await checkPassword(
      { sql: services.pool, rateLimits: services.rateLimits, now: services.now },
      { email, password: request.body.password, address: failureAddress(request.ip) },
    );
    switch (result.type) {
      case 'signed_in':
        await signIn(services, request, reply, result.account.id);
        return reply.redirect(SIGNED_IN_LANDING, 303);
      case 'refused':
        return sendPage(reply, signInPage(request, { email, message: SIGN_IN_REFUSED }), 401);
      case 'throttled':
        return sendPage(
          reply,
          signInPage(request, { email, message: throttledMessage(result.retryAfterSeconds, result.knownAddress) }),
          429,
        );
    }
  });

  app.post('/sign-out', { schema: { body: CsrfOnly }, config: { console: 'open' } }, async (request, reply) => {
    if (request.signedIn) await endSession(services.pool, request.signedIn.sessionId);
    reply.clearCookie(SESSION_COOKIE, { path: '/console' });
    return reply.redirect('/console/sign-in', 303);
  });

  registerForgotPages(app, services);
  registerResetPages(app, services);
  registerInvitationPages(app, services);
}

const forgotForm = (request: FastifyRequest, message?: string) =>
  page(
    frameOf(request, 'Reset your password'),
    html`${notice(message, 'alert')}
      <p>
        We mail a link to choose a new password. Using it signs you out everywhere and revokes your personal access
        tokens.
      </p>
      <form method="post" action="/console/forgot">
        ${field({ name: 'email', label: 'Email', type: 'email', required: true, autocomplete: 'username' })}
        <button type="submit">Send me a link</button>
      </form>`,
  );

function registerForgotPages(app: TypedApp, services: AppServices): void {
  app.get('/forgot', { config: { console: 'open' } }, async (request, reply) => sendPage(reply, forgotForm(request)));

  // The same work whatever the email: the lookup and the mail happen in the reset mailer (password-resets.ts).
  app.post('/forgot', { schema: { body: ForgotForm }, config: { console: 'open' } }, async (request, reply) => {
    const email = request.body.email.trim().toLowerCase();
    if (!email) return sendPage(reply, forgotForm(request, 'Enter your email.'), 400);
    const result = await requestPasswordReset(
      {
        sql: services.pool,
        rateLimits: services.rateLimits,
        now: services.now,
        mailing: Boolean(services.config.smtpUrl),
      },
      { email, address: failureAddress(request.ip) },
    );
    if (result.type === 'throttled')
      return sendPage(
        reply,
        forgotForm(
          request,
          `Too many reset requests for this email or from your address; try again in ${Math.ceil(result.retryAfterSeconds / 60)} minute(s).`,
        ),
        429,
      );
    return sendPage(
      reply,
      page(
        frameOf(request, 'Reset your password'),
        html`${notice('If this email belongs to a member, a link to choose a new password is on its way. It works once, for 30 minutes; a newer link ends an older one.')}`,
      ),
    );
  });
}

const spentPage = (request: FastifyRequest, title: string) =>
  page(
    frameOf(request, title),
    html`${notice('This link has been used or has expired. Ask for a new one.', 'alert')}
      <p><a href="/console/forgot">Reset your password</a></p>`,
  );

function registerResetPages(app: TypedApp, services: AppServices): void {
  const title = 'Choose a new password';
  const form = (request: FastifyRequest, token: string, errors: { password?: string } = {}) =>
    page(
      frameOf(request, title),
      html`<p>Setting a new password signs you out everywhere and revokes every personal access token you made.</p>
        <form method="post" action="/console/reset/${encodeURIComponent(token)}">
          ${newPasswordFields(errors)}
          <button type="submit">Set my password and sign in</button>
        </form>`,
    );

  app.get('/reset/:token', { schema: { params: TokenParams }, config: { console: 'open' } }, async (request, reply) => {
    const token = request.params.token;
    if (!(await isUsableOneTimeToken(services, 'password_reset', token)))
      return sendPage(reply, spentPage(request, title), 410);
    return sendPage(reply, form(request, token));
  });

  app.post(
    '/reset/:token',
    { schema: { params: TokenParams, body: NewPasswordForm }, config: { console: 'open' } },
    async (request, reply) => {
      const token = request.params.token;
      const pending = await isUsableOneTimeToken(services, 'password_reset', token);
      if (!pending) return sendPage(reply, spentPage(request, title), 410);
      const { password, confirm } = request.body;
      const problem = await newPasswordProblem(services.pool, pending.account_id, password, confirm);
      if (problem) return sendPage(reply, form(request, token, { password: problem }), 400);
      const accountId = await resetPassword(services, token, password);
      if (!accountId) return sendPage(reply, spentPage(request, title), 410);
      const account = await findAccount(services.pool, accountId);
      if (account && (await membershipsOf(services.pool, account.email)).length === 0)
        return sendPage(reply, spentPage(request, title), 410);
      await signIn(services, request, reply, accountId);
      return reply.redirect('/console', 303);
    },
  );
}
