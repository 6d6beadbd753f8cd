import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import {
  generateAuthenticationOptions,
  generateRegistrationOptions,
  verifyAuthenticationResponse,
  verifyRegistrationResponse,
  type AuthenticationResponseJSON,
  type RegistrationResponseJSON,
} from '@simplewebauthn/server';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppServices } from '../../bootstrap.js';
import type { TypedApp } from '../../http/typed-app.js';
import { findAccount } from '../../identity/accounts.js';
import { membershipsOf } from '../../identity/members.js';
import {
  findPasskey,
  keepChallenge,
  passkeysOf,
  recordPasskeyUse,
  removePasskey,
  savePasskey,
  takeChallenge,
} from '../../identity/passkeys.js';
import { markAuthenticated } from '../../identity/sessions.js';
import { ConsoleRefusal, signedInOf } from '../context.js';
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

function challengeCookie(reply: FastifyReply, request: FastifyRequest, handle: string): void {
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

const bodyOf = (request: FastifyRequest) => (request.body ?? {}) as { response?: unknown };

export function registerPasskeyPages(app: TypedApp, services: AppServices): void {
  app.get('/assets/passkeys.js', async (_request, reply) =>
    reply
      .type('text/javascript; charset=utf-8')
      .header('cache-control', 'public, max-age=3600')
      .send(`${BROWSER_BUNDLE}\n${PASSKEY_SCRIPT}`),
  );

  app.post('/passkeys/register/options', async (request, reply) => {
    const { session } = signedInOf(request);
    const { rpID } = party(request);
    const existing = await passkeysOf(services.pool, session.account_id);
    const options = await generateRegistrationOptions({
      rpName: 'visa-crm console',
      rpID,
      userName: session.email,
      userDisplayName: session.name,
      attestationType: 'none',
      excludeCredentials: existing.map((p) => ({ id: p.credential_id, transports: p.transports })),
      authenticatorSelection: { residentKey: 'required', userVerification: 'preferred' },
    });
    challengeCookie(
      reply,
      request,
      await keepChallenge(services.pool, options.challenge, session.account_id, services.now()),
    );
    return options;
  });

  app.post('/passkeys/register', async (request, reply) => {
    const { session } = signedInOf(request);
    const taken = await challengeOf(services, request, reply);
    if (taken.account_id !== session.account_id)
      throw new ConsoleRefusal(400, 'The passkey request expired; try again.');
    const { rpID, origin } = party(request);
    const verified = await verifyRegistrationResponse({
      response: bodyOf(request).response as RegistrationResponseJSON,
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
    return { added: true };
  });

  app.post('/passkeys/sign-in/options', async (request, reply) => {
    const { rpID } = party(request);
    const options = await generateAuthenticationOptions({ rpID, userVerification: 'preferred' });
    challengeCookie(reply, request, await keepChallenge(services.pool, options.challenge, null, services.now()));
    return options;
  });

  app.post('/passkeys/sign-in', async (request, reply) => {
    const taken = await challengeOf(services, request, reply);
    const response = bodyOf(request).response as AuthenticationResponseJSON | undefined;
    const refused = new ConsoleRefusal(401, 'That passkey does not match an account.');
    const passkey = typeof response?.id === 'string' ? await findPasskey(services.pool, response.id) : undefined;
    if (!passkey) throw refused;
    if (!(await usePasskey(services, request, passkey, response!, taken.challenge))) throw refused;
    const account = await findAccount(services.pool, passkey.account_id);
    if (!account || (await membershipsOf(services.pool, account.email)).length === 0) throw refused;
    await signIn(services, request, reply, account.id);
    return { redirect: '/console' };
  });

  // A recent sign-in by passkey: one of the signed-in account's own passkeys, asked for again.
  app.post('/passkeys/confirm/options', async (request, reply) => {
    const { session } = signedInOf(request);
    const { rpID } = party(request);
    const mine = await passkeysOf(services.pool, session.account_id);
    if (mine.length === 0) throw new ConsoleRefusal(400, 'You have no passkey; enter your password instead.');
    const options = await generateAuthenticationOptions({
      rpID,
      userVerification: 'preferred',
      allowCredentials: mine.map((p) => ({ id: p.credential_id, transports: p.transports })),
    });
    challengeCookie(
      reply,
      request,
      await keepChallenge(services.pool, options.challenge, session.account_id, services.now()),
    );
    return options;
  });

  app.post('/passkeys/confirm', async (request, reply) => {
    const signedIn = signedInOf(request);
    const taken = await challengeOf(services, request, reply);
    const response = bodyOf(request).response as AuthenticationResponseJSON | undefined;
    const passkey = typeof response?.id === 'string' ? await findPasskey(services.pool, response.id) : undefined;
    if (!passkey || passkey.account_id !== signedIn.session.account_id || taken.account_id !== passkey.account_id)
      throw new ConsoleRefusal(401, 'That passkey is not one of yours.');
    if (!(await usePasskey(services, request, passkey, response!, taken.challenge)))
      throw new ConsoleRefusal(401, 'That passkey is not one of yours.');
    await markAuthenticated(services.pool, signedIn.sessionId, services.now());
    return { confirmed: true };
  });

  app.post('/passkeys/:id/remove', async (request, reply) => {
    const { session } = signedInOf(request);
    if (!(await removePasskey(services.pool, session.account_id, (request.params as { id: string }).id)))
      throw new ConsoleRefusal(404, 'No such passkey of yours.');
    return reply.redirect('/console/account', 303);
  });
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
