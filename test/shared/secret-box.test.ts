import { createCipheriv, randomBytes, randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { decodeCursor, encodeCursor } from '../../src/intake/cursor.js';
import { purposeKey, SecretBox, type SecretPurpose } from '../../src/shared/secret-box.js';
import { verifyWebhook } from '../../src/webhooks/verify.js';
import { ALLOWED_ORIGIN, demoDefinition, seedWorkspace, startApp, TEST_ENCRYPTION_KEY } from '../support/app.js';
import { webhookHarness } from '../webhooks/support/harness.js';
import { waitFor } from '../webhooks/support/receiver.js';

const master = Buffer.alloc(32, 7);

/** A value sealed as the service did before the keys were split: `v1:` + AES-256-GCM under the raw master key. */
function legacySeal(key: Buffer, plaintext: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return `v1:${Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64')}`;
}

t.test(
  'one key per purpose, derived with HKDF-SHA256; values sealed for one purpose do not open as another',
  async (t) => {
    const box = new SecretBox(master);
    // Known answers: a change of salt, info or algorithm would make every stored value unreadable, so it must fail here.
    t.equal(
      purposeKey(master, 'list-cursor').toString('hex'),
      'b4b0189c5ef88542beffbef8fcdc32371adb3e45d3297c1fc64ccf1d62d36aa2',
      'the list-cursor key is pinned',
    );
    t.equal(
      box.webhookSecrets.open(
        'v2:6VY57LJwukrJJWLMVozCtFbwAmPOulAqPdt1+OWBi9VpqssOtteY51NrPStW7MG/ogptj/rmDu1R5CC/hz88atT8SJWS',
      ),
      'whsec_KnownAnswerKnownAnswerKnownAnswer12',
      'a webhook secret sealed by this version still opens',
    );
    t.equal(
      box.captchaSecrets.open('v2:Bj5u6pPFfbMUaRsl2OGG9QawKGMVR09b44lu5aU1cZtIn/3Pb12W/pFnCZfVwdla'),
      'captcha-known-answer',
      'a captcha secret sealed by this version still opens',
    );

    const purposes: Array<[SecretPurpose, 'webhookSecrets' | 'captchaSecrets' | 'listCursors']> = [
      ['webhook-secret', 'webhookSecrets'],
      ['captcha-secret', 'captchaSecrets'],
      ['list-cursor', 'listCursors'],
    ];
    const everyPurpose: SecretPurpose[] = [
      ...purposes.map(([p]) => p),
      'person-key',
      'person-key-seed',
      'person-key-nonce',
    ];
    const keys = everyPurpose.map((purpose) => purposeKey(master, purpose).toString('hex'));
    t.equal(new Set([...keys, master.toString('hex')]).size, 7, 'six different keys, none of them the master key');
    for (const [from, fromBox] of purposes) {
      const sealed = box[fromBox].seal('the same plaintext');
      t.match(sealed, /^v2:/, `${from} values are sealed in the purpose-key format`);
      t.equal(box[fromBox].open(sealed), 'the same plaintext', `${from} opens its own values`);
      t.throws(() => legacyOpenRaw(master, sealed), `a ${from} value does not open with the raw master key`);
      t.throws(() => new SecretBox(Buffer.alloc(32, 8))[fromBox].open(sealed), `nor with another master key`);
      for (const [to, toBox] of purposes)
        if (to !== from) t.throws(() => box[toBox].open(sealed), `a ${from} value does not open as a ${to}`);
    }

    const oldWebhook = legacySeal(master, 'whsec_OldOldOldOldOldOldOldOldOldOld12');
    const oldCaptcha = legacySeal(master, 'old-captcha-secret');
    t.equal(box.webhookSecrets.open(oldWebhook), 'whsec_OldOldOldOldOldOldOldOldOldOld12', 'old webhook secrets open');
    t.equal(box.captchaSecrets.open(oldCaptcha), 'old-captcha-secret', 'old captcha secrets open');
    t.throws(() => box.listCursors.open(oldWebhook), 'the cursor box reads no raw-key values');
    t.throws(() => box.webhookSecrets.open(legacySeal(Buffer.alloc(32, 8), 'x')), 'an old value of another key fails');
  },
);

/** Opens a `v1:` or `v2:` value with the raw key and no additional data, as the old code did. */
function legacyOpenRaw(key: Buffer, sealed: string): string {
  return new SecretBox(key).webhookSecrets.open(`v1:${sealed.slice(3)}`);
}

t.test('cursors: new ones round-trip, old ones (sealed with the raw key) are refused as invalid', async (t) => {
  const box = new SecretBox(master);
  const tenant = randomUUID();
  const position = { updatedAt: new Date('2026-03-01T10:00:00.123Z'), id: randomUUID() };
  const cursor = encodeCursor(box, tenant, false, position);
  t.same(decodeCursor(box, tenant, false, cursor), position);
  t.ok(cursor.length <= 200, 'within the spec length');
  const plain = [
    tenant.replaceAll('-', ''),
    '0',
    position.updatedAt.getTime().toString(36),
    position.id.replaceAll('-', ''),
  ];
  const old = legacySeal(master, plain.join('.')).slice(3).replaceAll('+', '-').replaceAll('/', '_').replace(/=+$/, '');
  t.equal(decodeCursor(box, tenant, false, old), undefined, 'an old cursor is not a cursor any more');

  const api = await startApp(t);
  const ws = await seedWorkspace(api);
  for (const name of ['Cursor One', 'Cursor Two'])
    t.equal(
      (
        await api.request('/v1/leads', {
          key: ws.live,
          method: 'POST',
          json: { full_name: name, email: `${name.replace(' ', '')}@example.com`, consent: true },
        })
      ).status,
      201,
    );
  const first = (await (await api.request('/v1/leads?limit=1', { key: ws.live })).json()) as { next_cursor: string };
  t.equal(
    (await api.request(`/v1/leads?limit=1&cursor=${first.next_cursor}`, { key: ws.live })).status,
    200,
    'a new cursor reads the next page',
  );
  const oldPlain = [
    ws.workspace.id.replaceAll('-', ''),
    '0',
    Date.now().toString(36),
    randomUUID().replaceAll('-', ''),
  ];
  const oldCursor = legacySeal(Buffer.from(TEST_ENCRYPTION_KEY, 'base64'), oldPlain.join('.'))
    .slice(3)
    .replaceAll('+', '-')
    .replaceAll('/', '_')
    .replace(/=+$/, '');
  const refused = await api.request(`/v1/leads?limit=1&cursor=${oldCursor}`, { key: ws.live });
  t.equal(refused.status, 400, 'an old cursor answers as an invalid cursor does');
  t.match(await refused.json(), { error: 'validation_failed', fields: { cursor: String } });
});

t.test('a webhook secret stored sealed with the raw key (before the split) still signs deliveries', async (t) => {
  const h = await webhookHarness(t);
  const endpoint = await h.createEndpoint({ url: h.receiver.url('localhost'), events: ['document.uploaded'] });
  const rawKey = Buffer.from(TEST_ENCRYPTION_KEY, 'base64');
  // The read model (which deliveries read) as a database written by the previous version holds it.
  await h.pool.query('UPDATE webhook_endpoints SET sealed_secret = $2 WHERE id = $1', [
    endpoint.id,
    legacySeal(rawKey, endpoint.secret),
  ]);
  await h.startWorkers();
  const event = await h.appendEvent('document.uploaded', { id: randomUUID(), file: 'passport.pdf' });
  const received = await waitFor(() => h.receiver.forEvent(event.id)[0], 'delivered');
  const envelope = verifyWebhook({
    secret: endpoint.secret,
    signature: received.headers['x-service-signature'],
    body: received.body,
  });
  t.equal(envelope.id, event.id, 'the delivery is signed with the secret the old value holds');
});

t.test('a captcha secret stored sealed with the raw key still reaches the provider', async (t) => {
  const posted: URLSearchParams[] = [];
  const provider = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      posted.push(new URLSearchParams(body));
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ success: true }));
    });
  });
  await new Promise<void>((resolve) => provider.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => provider.close(() => resolve())));
  const verifyUrl = `http://127.0.0.1:${(provider.address() as AddressInfo).port}/siteverify`;
  const api = await startApp(t, {
    config: { captchaVerifyUrls: { turnstile: verifyUrl, hcaptcha: verifyUrl, recaptcha: verifyUrl } },
  });
  const ws = await seedWorkspace(api, {
    widget: {
      ...demoDefinition().widget,
      captcha: { provider: 'turnstile', site_key: '0x4AAA-site', secret: 'unused' },
    },
  });
  const oldSecret = 'captcha-secret-from-before-the-split';
  await api.pool.query(
    `UPDATE workspaces SET settings = jsonb_set(settings, '{widget,captcha,sealed_secret}', to_jsonb($2::text)),
       revision = revision + 1 WHERE id = $1`,
    [ws.workspace.id, legacySeal(Buffer.from(TEST_ENCRYPTION_KEY, 'base64'), oldSecret)],
  );
  const response = await api.request('/v1/leads', {
    key: ws.publicLive,
    method: 'POST',
    headers: { origin: ALLOWED_ORIGIN },
    json: { full_name: 'Form Person', email: 'form.person@example.com', consent: true, captcha_token: 'token-1' },
  });
  t.equal(response.status, 201, 'the capture passes the captcha check');
  t.equal(posted[0]?.get('secret'), oldSecret, 'the provider was asked with the secret the old value holds');
});
