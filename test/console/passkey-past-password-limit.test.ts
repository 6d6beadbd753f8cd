import { createHash, generateKeyPairSync, randomBytes, sign } from 'node:crypto';
import t from 'tap';
import { findAccountByEmail } from '../../src/identity/accounts.js';
import { savePasskey } from '../../src/identity/passkeys.js';
import { memberOf } from '../identity/support.js';
import { consoleFixture } from './support.js';

/** A software passkey (P-256, ES256): its COSE public key, and assertions signed as an authenticator signs them. */
function softwarePasskey() {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const jwk = publicKey.export({ format: 'jwk' });
  const x = Buffer.from(jwk.x!, 'base64url');
  const y = Buffer.from(jwk.y!, 'base64url');
  // CBOR map {1: 2 (EC2), 3: -7 (ES256), -1: 1 (P-256), -2: x, -3: y}.
  const cose = Buffer.concat([
    Buffer.from([0xa5, 0x01, 0x02, 0x03, 0x26, 0x20, 0x01, 0x21, 0x58, 0x20]),
    x,
    Buffer.from([0x22, 0x58, 0x20]),
    y,
  ]);
  const id = randomBytes(16).toString('base64url');
  const assertion = (challenge: string, origin: string, rpId: string, counter: number) => {
    const clientDataJSON = Buffer.from(JSON.stringify({ type: 'webauthn.get', challenge, origin, crossOrigin: false }));
    const count = Buffer.alloc(4);
    count.writeUInt32BE(counter);
    const authenticatorData = Buffer.concat([createHash('sha256').update(rpId).digest(), Buffer.from([0x05]), count]);
    const signed = Buffer.concat([authenticatorData, createHash('sha256').update(clientDataJSON).digest()]);
    return {
      id,
      rawId: id,
      type: 'public-key',
      clientExtensionResults: {},
      response: {
        clientDataJSON: clientDataJSON.toString('base64url'),
        authenticatorData: authenticatorData.toString('base64url'),
        signature: sign('sha256', signed, privateKey).toString('base64url'),
      },
    };
  };
  return { id, cose, assertion };
}

t.test('a passkey signs in while the password is throttled from the same address', async (t) => {
  const f = await consoleFixture(t);
  const email = memberOf('admin');
  const account = (await findAccountByEmail(f.app.pool, email))!;
  const passkey = softwarePasskey();
  await savePasskey(f.app.pool, {
    credentialId: passkey.id,
    accountId: account.id,
    publicKey: passkey.cose,
    counter: 0,
    transports: [],
    name: 'software',
    now: new Date(),
  });
  const c = f.client();
  for (let i = 0; i < 6; i += 1) await c.signIn(email, `wrong ${i}`);
  t.equal((await c.signIn(email)).status, 429, 'the password waits');

  const origin = f.app.baseUrl;
  const options = await fetch(`${origin}/console/passkeys/sign-in/options`, {
    method: 'POST',
    headers: { origin, 'content-type': 'application/json' },
    body: '{}',
  });
  t.equal(options.status, 200);
  const { challenge } = (await options.json()) as { challenge: string };
  const challengeCookie = options.headers.get('set-cookie')!.split(';')[0]!;
  const signedIn = await fetch(`${origin}/console/passkeys/sign-in`, {
    method: 'POST',
    headers: { origin, 'content-type': 'application/json', cookie: challengeCookie },
    body: JSON.stringify({ response: passkey.assertion(challenge, origin, '127.0.0.1', 1) }),
  });
  t.equal(signedIn.status, 200, 'the passkey is never throttled by password failures');
  t.same(await signedIn.json(), { redirect: '/console?landing=1' });
  const session = signedIn.headers
    .getSetCookie()
    .find((c) => c.startsWith('vcrm_session='))!
    .split(';')[0]!;
  const home = await fetch(`${origin}/console`, { headers: { cookie: session }, redirect: 'manual' });
  t.equal(home.status, 200, 'signed in');
});
