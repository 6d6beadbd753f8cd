import { createHmac } from 'node:crypto';
import t from 'tap';
import { Webhook } from 'standardwebhooks';
import { addressProblem } from '../../src/webhooks/address-guard.js';
import { generateSecret, signatureHeader, standardSignatureHeader } from '../../src/webhooks/signing.js';
import { verifyWebhook, WebhookVerificationError } from '../../src/webhooks/verify.js';

const body = JSON.stringify({
  id: '0b8f3c1e-2d4a-4f6b-8c9d-1e2f3a4b5c6d',
  event: 'lead.created',
  tenant_id: '7c1d2e3f-4a5b-4c6d-8e9f-0a1b2c3d4e5f',
  created_at: '2026-11-01T10:00:00.000Z',
  data: { id: 'x' },
});
const now = new Date('2026-11-01T10:00:30.000Z');
const t0 = Math.floor(now.getTime() / 1000);

t.test('signatures match an independent HMAC computation', async (t) => {
  const secret = generateSecret();
  t.match(secret, /^whsec_[A-Za-z0-9]{32}$/);
  t.not(generateSecret(), secret, 'secrets are random');
  const expected = createHmac('sha256', secret).update(`${t0}.${body}`).digest('hex');
  t.equal(signatureHeader([secret], t0, body), `t=${t0},v1=${expected}`);
  const old = generateSecret();
  const previous = createHmac('sha256', old).update(`${t0}.${body}`).digest('hex');
  t.equal(
    signatureHeader([secret, old], t0, body),
    `t=${t0},v1=${expected},v1=${previous}`,
    'one v1 per secret during a rotation',
  );
  const std = standardSignatureHeader([secret], 'msg_1', t0, body);
  t.ok(
    new Webhook(secret).verify(body, {
      'webhook-id': 'msg_1',
      'webhook-timestamp': String(Math.floor(Date.now() / 1000)),
      'webhook-signature': standardSignatureHeader([secret], 'msg_1', Math.floor(Date.now() / 1000), body),
    }),
  );
  t.match(std, /^v1,[A-Za-z0-9+/]+=*$/);
});

t.test('verifyWebhook accepts either v1, in constant time, within 5 minutes', async (t) => {
  const current = generateSecret();
  const old = generateSecret();
  const header = signatureHeader([current, old], t0, body);
  t.match(
    verifyWebhook({ body, signature: header, secret: current, now }),
    { event: 'lead.created' },
    'the new secret verifies',
  );
  t.ok(verifyWebhook({ body, signature: header, secret: old, now }), 'the old secret verifies');
  t.ok(
    verifyWebhook({ body: Buffer.from(body), signature: header, secret: [generateSecret(), old], now }),
    'a list of secrets and a Buffer body work',
  );
  t.ok(
    verifyWebhook({ body, signature: header, secret: current, now: new Date((t0 + 300) * 1000) }),
    '300 s late is accepted',
  );
  const refuse = (name: string, input: Parameters<typeof verifyWebhook>[0], pattern: RegExp) =>
    t.throws(() => verifyWebhook(input), { name: 'WebhookVerificationError', message: pattern }, name);
  refuse(
    'a tampered body',
    { body: body.replace('lead.created', 'lead.updated'), signature: header, secret: current, now },
    /No signature matches/,
  );
  refuse('a wrong secret', { body, signature: header, secret: generateSecret(), now }, /No signature matches/);
  refuse('301 s late', { body, signature: header, secret: current, now: new Date((t0 + 301) * 1000) }, /tolerance/);
  refuse('301 s early', { body, signature: header, secret: current, now: new Date((t0 - 301) * 1000) }, /tolerance/);
  refuse('a missing header', { body, signature: undefined, secret: current, now }, /missing/);
  refuse('no timestamp', { body, signature: header.replace(/^t=\d+,/, ''), secret: current, now }, /timestamp/);
  refuse('no v1', { body, signature: `t=${t0}`, secret: current, now }, /no v1/);
  refuse('a short v1', { body, signature: `t=${t0},v1=abcd`, secret: current, now }, /no v1/);
  refuse(
    'a re-signed timestamp',
    { body, signature: header.replace(`t=${t0}`, `t=${t0 + 1}`), secret: current, now },
    /No signature matches/,
  );
  t.ok(new WebhookVerificationError('x') instanceof Error);
});

t.test('address classification', async (t) => {
  const internal = [
    '127.0.0.1',
    '10.1.1.1',
    '172.31.255.255',
    '192.168.1.1',
    '169.254.169.254',
    '100.64.0.1',
    '0.0.0.0',
    '255.255.255.255',
    '224.0.0.251',
    '198.18.0.1',
    '240.0.0.1',
    '::1',
    '::',
    'fe80::1',
    'fc00::1',
    'fd00:ec2::254',
    'ff02::1',
    '::ffff:10.0.0.1',
    '::ffff:127.0.0.1',
    '64:ff9b::8.8.8.8',
    '64:ff9b:1::1',
    '2002:c000:0204::1',
    '2001:db8::1',
    '2001::1',
    '::7f00:1',
    '100::1',
  ];
  for (const address of internal) t.ok(addressProblem(address, false), `${address} is refused`);
  for (const address of ['93.184.216.34', '8.8.8.8', '2606:4700:4700::1111', '::ffff:93.184.216.34'])
    t.equal(addressProblem(address, false), null, `${address} is public`);
  t.equal(addressProblem('127.0.0.1', true), null, 'loopback passes only with the test switch');
  t.equal(addressProblem('::1', true), null);
  t.ok(addressProblem('10.0.0.1', true), 'the test switch opens loopback only');
});
