import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { AuthenticationResponseJSON } from '@simplewebauthn/server';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { AppServices } from '../../bootstrap.js';
import type { TypedApp } from '../../http/typed-app.js';
import { findAccount } from '../../identity/accounts.js';
import { membershipsOf, type Membership } from '../../identity/members.js';
import { passkeyRequired } from '../../identity/passkey-requirement.js';
import {
  findPasskey,
  keepChallenge,
  passkeysOf,
  recordPasskeyUse,
  removePasskey,
  savePasskey,
  takeChallenge,
} from '../../identity/passkeys.js';
import { markPasskeyUsed } from '../../identity/sessions.js';
import { webauthn } from '../../identity/webauthn.js';
import { ConsoleRefusal, frameOf, SIGNED_IN_LANDING, sendPage, signedInOf, type SignedIn } from '../context.js';
import { html } from '../html.js';
import { csrfField, page } from '../layout.js';
import { signIn } from './auth.js';

const CHALLENGE_COOKIE = 'vcrm_challenge';
const require = createRequire(import.meta.url);
/**
 * @simplewebauthn/browser's published browser bundle (the file its README links on unpkg), served from the console's
 * own origin (CSP: script-src 'self'). Its package exports only its modules, so the bundle is found beside them.
 */
const BROWSER_BUNDLE = readFileSync(
  path.join(path.dirname(require.resolve('@simplewebauthn/browser')), '..', 'dist', 'bundle', 'index.umd.min.js'),
  'utf8',
);

/** The script of the passkey buttons: the WebAuthn ceremony, then a JSON post to the console. */
export const PASSKEY_SCRIPT = `'use strict';
(function () {
  var W = window.SimpleWebAuthnBrowser;
  function say(text, id) { var s = document.getElementById(id || 'passkey-status'); if (s) s.textContent = text; }
  function post(url, body) {
    return fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body), credentials: 'same-origin' })
      .then(function (r) { return r.json().then(function (j) { if (!r.ok) throw new Error(j.message || 'refused'); return j; }); });
  }
  var add = document.getElementById('add-passkey');
  if (add) add.addEventListener('click', function () {
    var csrf = add.getAttribute('data-csrf');
    post('/console/passkeys/register/options', { _csrf: csrf })
      .then(function (options) { return W.startRegistration({ optionsJSON: options }); })
      .then(function (response) { return post('/console/passkeys/register', { _csrf: csrf, response: response }); })
      .then(function () { window.location.reload(); })
      .catch(function (e) { say('The passkey was not added: ' + e.message); });
  });
  var confirm = document.getElementById('passkey-confirm');
  if (confirm) confirm.addEventListener('click', function () {
    var csrf = confirm.getAttribute('data-csrf');
    post('/console/passkeys/confirm/options', { _csrf: csrf })
      .then(function (options) { return W.startAuthentication({ optionsJSON: options }); })
      .then(function (response) { return post('/console/passkeys/confirm', { _csrf: csrf, response: response }); })
      .then(function () { window.location.reload(); })
      .catch(function (e) { say('The passkey did not confirm it is you: ' + e.message, 'passkey-confirm-status'); });
  });
  var use = document.getElementById('passkey-sign-in');
  if (use) use.addEventListener('click', function () {
    post('/console/passkeys/sign-in/options', {})
      .then(function (options) { return W.startAuthentication({ optionsJSON: options }); })
      .then(function (response) { return post('/console/passkeys/sign-in', { response: response }); })
      .then(function (answer) { window.location.assign(answer.redirect); })
      .catch(function (e) { say('Signing in with a passkey did not work: ' + e.message); });
  });
})();
`;

/** The relying party is the host the console is served on (a passkey belongs to a name, never to an IP address). */
function party(request: FastifyRequest) {
  return { rpID: request.hostname, origin: `${request.protocol}://${request.host}` };
}

/** Keeps a ceremony's challenge (bound to the signed-in account, if any) and hands its handle over in a cookie. */
async function issueChallenge(
  services: AppServices,
  request: FastifyRequest,
  reply: FastifyReply,
  challenge: string,
  accountId: string | null,
): Promise<void> {
  const handle = await keepChallenge(services.pool, challenge, accountId, services.now());
  reply.setCookie(CHALLENGE_COOKIE, handle, {
    path: '/console/passkeys',
    httpOnly: true,
    sameSite: 'strict',
    secure: request.protocol === 'https',
    maxAge: 300,
  });
}

async function challengeOf(services: AppServices, request: FastifyRequest, reply: FastifyReply) {
  const handle = request.cookies[CHALLENGE_COOKIE];
  reply.clearCookie(CHALLENGE_COOKIE, { path: '/console/passkeys' });
  const taken = handle ? await takeChallenge(services.pool, handle, services.now()) : undefined;
  if (!taken) throw new ConsoleRefusal(400, 'The passkey request expired; try again.');
  return taken;
}

// The passkey script posts JSON: the CSRF token and the browser's answer, as @simplewebauthn/browser shapes it.
const B64 = Type.String({ pattern: '^[A-Za-z0-9_-]*={0,2}$', maxLength: 16384 });
const Csrf = { _csrf: Type.Optional(Type.String({ maxLength: 200 })) };
const CsrfOnly = Type.Object(Csrf);
const Extensions = Type.Object({
  appid: Type.Optional(Type.Boolean()),
  credProps: Type.Optional(Type.Object({ rk: Type.Optional(Type.Boolean()) })),
  hmacCreateSecret: Type.Optional(Type.Boolean()),
});
const Credential = {
  id: B64,
  rawId: B64,
  authenticatorAttachment: Type.Optional(Type.Union([Type.Literal('cross-platform'), Type.Literal('platform')])),
  clientExtensionResults: Extensions,
  type: Type.Literal('public-key'),
};
const Registration = Type.Object({
  ...Csrf,
  response: Type.Object({
    ...Credential,
    response: Type.Object({
      clientDataJSON: B64,
      attestationObject: B64,
      authenticatorData: Type.Optional(B64),
      transports: Type.Optional(Type.Array(Type.String({ maxLength: 20 }), { maxItems: 10 })),
      publicKeyAlgorithm: Type.Optional(Type.Integer()),
      publicKey: Type.Optional(B64),
    }),
  }),
});
const Authentication = Type.Object({
  ...Csrf,
  response: Type.Object({
    ...Credential,
    response: Type.Object({
      clientDataJSON: B64,
      authenticatorData: B64,
      signature: B64,
      userHandle: Type.Optional(B64),
    }),
  }),
});
const PasskeyParams = Type.Object({ id: Type.String({ pattern: '^[A-Za-z0-9_-]{1,1024}$' }) });

/** The workspaces of these memberships that ask this member for a passkey at sign-in. */
function requiringPasskey(memberships: readonly Membership[]): Membership[] {
  return memberships.filter((m) => passkeyRequired(m.workspace, m.user.role));
}

/**
 * Whether the session still owes a passkey: the account is a member of a workspace that requires one of their role
 * and no passkey was used in this session (a password alone opened it).
 */
export async function passkeyStepDue(
  services: AppServices,
  signedIn: SignedIn,
  memberships?: readonly Membership[],
): Promise<boolean> {
  if (signedIn.session.passkey_at) return false;
  const mine = memberships ?? (await membershipsOf(services.pool, signedIn.session.email));
  return requiringPasskey(mine).length > 0;
}

/** The page a member is led to until their session has used a passkey: confirm with one, or register the first. */
async function requiredPage(services: AppServices, request: FastifyRequest, signedIn: SignedIn): Promise<string> {
  const requiring = requiringPasskey(await membershipsOf(services.pool, signedIn.session.email));
  const names = requiring.map((m) => m.workspace.name).join(', ');
  const hasOne = (await passkeysOf(services.pool, signedIn.session.account_id)).length > 0;
  return page(
    frameOf(request, hasOne ? 'Confirm with your passkey' : 'Register a passkey'),
    html`<p>
        ${names} ${requiring.length > 1 ? 'ask' : 'asks'} you to sign in with a passkey.
        ${hasOne ? 'Use one of your passkeys to go on.' : 'Register one now to go on; from then on sign in with it.'}
      </p>
      ${
        hasOne
          ? html`<button type="button" id="passkey-confirm" data-csrf="${signedIn.csrf}">Confirm with a passkey</button>
              <p id="passkey-confirm-status" role="status"></p>
              <p>
                Lost your passkey? Ask an owner or admin of the workspace to reset your passkeys, then sign in again.
              </p>`
          : html`<button type="button" id="add-passkey" data-csrf="${signedIn.csrf}">Register a passkey</button>
              <p id="passkey-status" role="status"></p>`
      }
      <form method="post" action="/console/sign-out">
        ${csrfField(signedIn.csrf)}<button type="submit">Sign out</button>
      </form>`,
  );
}

/** A session that owes a passkey may not add another or remove one (a stolen password must not swap them). */
async function refuseWithoutPasskeySession(services: AppServices, signedIn: SignedIn, what: string): Promise<void> {
  if (await passkeyStepDue(services, signedIn))
    throw new ConsoleRefusal(
      403,
      `Confirm with one of your passkeys before you ${what}. A lost passkey is reset by an owner or admin.`,
    );
}

export function registerPasskeyPages(app: TypedApp, services: AppServices): void {
  // A workspace that requires passkeys of the member's role: its pages wait until the session has used one. Runs
  // after the plugin's access check, which put the member in view on the request.
  app.addHook('preHandler', async (request, reply) => {
    const view = request.memberInView;
    if (!view || view.signedIn.session.passkey_at || !passkeyRequired(view.workspace, view.role)) return;
    return reply.redirect('/console/passkeys/required', 303);
  });
  // The account's own pages wait too: a password alone must not change the password, sign out everywhere (ending the
  // member's passkey sessions and tokens), make tokens or accept invitations while a workspace asks for a passkey.
  app.addHook('preHandler', async (request, reply) => {
    const signedIn = request.signedIn;
    if (request.routeOptions.config.console !== 'account' || !signedIn || signedIn.session.passkey_at) return;
    if (!(await passkeyStepDue(services, signedIn))) return;
    if (request.method === 'GET') return reply.redirect('/console/passkeys/required', 303);
    throw new ConsoleRefusal(
      403,
      'A workspace of yours requires a passkey: confirm with yours (or register your first) before anything else.',
    );
  });

  app.get('/passkeys/required', { config: { console: 'passkey_step' } }, async (request, reply) => {
    const signedIn = signedInOf(request);
    if (!(await passkeyStepDue(services, signedIn))) return reply.redirect('/console', 303);
    return sendPage(reply, await requiredPage(services, request, signedIn));
  });

  app.get('/assets/passkeys.js', { config: { console: 'open' } }, async (_request, reply) =>
    reply
      .type('text/javascript; charset=utf-8')
      .header('cache-control', 'public, max-age=3600')
      .send(`${BROWSER_BUNDLE}\n${PASSKEY_SCRIPT}`),
  );

  app.post(
    '/passkeys/register/options',
    { schema: { body: CsrfOnly }, config: { console: 'passkey_step' } },
    async (request, reply) => {
      const signedIn = signedInOf(request);
      const { session } = signedIn;
      const { rpID } = party(request);
      const existing = await passkeysOf(services.pool, session.account_id);
      // The first passkey is registered right after the password; another needs a session that used one.
      if (existing.length > 0) await refuseWithoutPasskeySession(services, signedIn, 'add another passkey');
      const { generateRegistrationOptions } = await webauthn();
      const options = await generateRegistrationOptions({
        rpName: 'visa-crm console',
        rpID,
        userName: session.email,
        userDisplayName: session.name,
        attestationType: 'none',
        excludeCredentials: existing.map((p) => ({ id: p.credential_id, transports: p.transports })),
        authenticatorSelection: { residentKey: 'required', userVerification: 'preferred' },
      });
      await issueChallenge(services, request, reply, options.challenge, session.account_id);
      return options;
    },
  );

  app.post(
    '/passkeys/register',
    { schema: { body: Registration }, config: { console: 'passkey_step' } },
    async (request, reply) => {
      const signedIn = signedInOf(request);
      const { session } = signedIn;
      const taken = await challengeOf(services, request, reply);
      if (taken.account_id !== session.account_id)
        throw new ConsoleRefusal(400, 'The passkey request expired; try again.');
      const { rpID, origin } = party(request);
      const { verifyRegistrationResponse } = await webauthn();
      const verified = await verifyRegistrationResponse({
        response: request.body.response,
        expectedChallenge: taken.challenge,
        expectedOrigin: origin,
        expectedRPID: rpID,
        requireUserVerification: false,
      }).catch(() => ({ verified: false as const }));
      if (!verified.verified) throw new ConsoleRefusal(400, 'The passkey could not be verified.');
      const { credential } = verified.registrationInfo;
      await savePasskey(services.pool, {
        credentialId: credential.id,
        accountId: session.account_id,
        publicKey: credential.publicKey,
        counter: credential.counter,
        transports: credential.transports ?? [],
        name: `Passkey added ${services.now().toISOString().slice(0, 10)}`,
        now: services.now(),
      });
      // Registering proves holding the new passkey: the session counts as one a passkey opened.
      await markPasskeyUsed(services.pool, signedIn.sessionId, services.now());
      return { added: true };
    },
  );

  app.post(
    '/passkeys/sign-in/options',
    { schema: { body: Type.Object({}, { additionalProperties: false }) }, config: { console: 'open' } },
    async (request, reply) => {
      const { rpID } = party(request);
      const { generateAuthenticationOptions } = await webauthn();
      const options = await generateAuthenticationOptions({ rpID, userVerification: 'preferred' });
      await issueChallenge(services, request, reply, options.challenge, null);
      return options;
    },
  );

  app.post(
    '/passkeys/sign-in',
    { schema: { body: Authentication }, config: { console: 'open' } },
    async (request, reply) => {
      const taken = await challengeOf(services, request, reply);
      const { response } = request.body;
      const refused = new ConsoleRefusal(401, 'That passkey does not match an account.');
      const passkey = await findPasskey(services.pool, response.id);
      if (!passkey) throw refused;
      if (!(await usePasskey(services, request, passkey, response, taken.challenge))) throw refused;
      const account = await findAccount(services.pool, passkey.account_id);
      if (!account || (await membershipsOf(services.pool, account.email)).length === 0) throw refused;
      await signIn(services, request, reply, account.id, true);
      return { redirect: SIGNED_IN_LANDING };
    },
  );

  // A recent sign-in by passkey: one of the signed-in account's own passkeys, asked for again.
  app.post(
    '/passkeys/confirm/options',
    { schema: { body: CsrfOnly }, config: { console: 'passkey_step' } },
    async (request, reply) => {
      const { session } = signedInOf(request);
      const { rpID } = party(request);
      const mine = await passkeysOf(services.pool, session.account_id);
      if (mine.length === 0) throw new ConsoleRefusal(400, 'You have no passkey; enter your password instead.');
      const { generateAuthenticationOptions } = await webauthn();
      const options = await generateAuthenticationOptions({
        rpID,
        userVerification: 'preferred',
        allowCredentials: mine.map((p) => ({ id: p.credential_id, transports: p.transports })),
      });
      await issueChallenge(services, request, reply, options.challenge, session.account_id);
      return options;
    },
  );

  app.post(
    '/passkeys/confirm',
    { schema: { body: Authentication }, config: { console: 'passkey_step' } },
    async (request, reply) => {
      const signedIn = signedInOf(request);
      const taken = await challengeOf(services, request, reply);
      const { response } = request.body;
      const passkey = await findPasskey(services.pool, response.id);
      if (!passkey || passkey.account_id !== signedIn.session.account_id || taken.account_id !== passkey.account_id)
        throw new ConsoleRefusal(401, 'That passkey is not one of yours.');
      if (!(await usePasskey(services, request, passkey, response, taken.challenge)))
        throw new ConsoleRefusal(401, 'That passkey is not one of yours.');
      await markPasskeyUsed(services.pool, signedIn.sessionId, services.now());
      return { confirmed: true };
    },
  );

  app.post(
    '/passkeys/:id/remove',
    { schema: { params: PasskeyParams, body: CsrfOnly }, config: { console: 'account' } },
    async (request, reply) => {
      const signedIn = signedInOf(request);
      await refuseWithoutPasskeySession(services, signedIn, 'remove a passkey');
      if (!(await removePasskey(services.pool, signedIn.session.account_id, request.params.id)))
        throw new ConsoleRefusal(404, 'No such passkey of yours.');
      return reply.redirect('/console/account', 303);
    },
  );
}

/** Verifies an assertion of a stored passkey against the challenge taken, and records its use; false if it fails. */
async function usePasskey(
  services: AppServices,
  request: FastifyRequest,
  passkey: NonNullable<Awaited<ReturnType<typeof findPasskey>>>,
  response: AuthenticationResponseJSON,
  challenge: string,
): Promise<boolean> {
  const { rpID, origin } = party(request);
  const { verifyAuthenticationResponse } = await webauthn();
  const verified = await verifyAuthenticationResponse({
    response,
    expectedChallenge: challenge,
    expectedOrigin: origin,
    expectedRPID: rpID,
    credential: {
      id: passkey.credential_id,
      publicKey: new Uint8Array(passkey.public_key),
      counter: passkey.counter,
      transports: passkey.transports,
    },
    requireUserVerification: false,
  }).catch(() => ({ verified: false as const }));
  if (!verified.verified) return false;
  await recordPasskeyUse(services.pool, passkey.credential_id, verified.authenticationInfo.newCounter, services.now());
  return true;
}
