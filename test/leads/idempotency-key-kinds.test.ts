import t from 'tap';
import { ALLOWED_ORIGIN, leadBody, leadsFixture } from './helpers.js';

/**
 * A public key is published in web pages, so anyone can send Idempotency-Keys with it; those keys
 * are kept apart from the keys of the workspace's secret-key integrations (per workspace, mode and key kind).
 */
t.test('one Idempotency-Key from a public and from a secret key gets two independent answers', async (t) => {
  const f = await leadsFixture(t);
  const fromPublic = { key: f.publicLive, headers: { origin: ALLOWED_ORIGIN, 'idempotency-key': 'order-1' } };
  const fromSecret = { key: f.live, headers: { 'idempotency-key': 'order-1' } };

  const visitor = leadBody({ captcha_token: 'token-1' });
  const integration = leadBody();
  const first = await f.post(visitor, fromPublic);
  t.equal(first.status, 201);
  const second = await f.post(integration, fromSecret);
  t.equal(second.status, 201, 'the secret key’s request ran: not refused as a reused key');
  t.notOk(second.headers.get('idempotent-replayed'));
  t.not(second.body.id, first.body.id, 'a lead of its own');

  const publicAgain = await f.post(visitor, fromPublic);
  t.same([publicAgain.status, publicAgain.body], [201, first.body], 'each kind replays its own first answer');
  t.equal(publicAgain.headers.get('idempotent-replayed'), 'true');
  const secretAgain = await f.post(integration, fromSecret);
  t.same([secretAgain.status, secretAgain.body], [201, second.body]);
  t.equal(secretAgain.headers.get('idempotent-replayed'), 'true');

  // Whoever learns an integration's next key and sends it first with the public key takes nothing from it.
  const taken = await f.post(
    { ...integration, captcha_token: 'token-2' },
    { key: f.publicLive, headers: { origin: ALLOWED_ORIGIN, 'idempotency-key': 'order-2' } },
  );
  t.equal(taken.status, 200, 'the public request ran (the person is a duplicate)');
  const original = await f.post(integration, { ...fromSecret, headers: { 'idempotency-key': 'order-2' } });
  t.same([original.status, original.body], [200, { id: second.body.id, duplicate: true }], 'it ran: a duplicate');
  t.notOk(original.headers.get('idempotent-replayed'));

  const stored = await f.pool.query(
    `SELECT operation, key FROM api_idempotency WHERE tenant_id = $1 ORDER BY key, operation`,
    [f.workspace.id],
  );
  t.same(
    stored.rows,
    [
      { operation: 'createLead:public', key: 'order-1' },
      { operation: 'createLead:secret', key: 'order-1' },
      { operation: 'createLead:public', key: 'order-2' },
      { operation: 'createLead:secret', key: 'order-2' },
    ],
    'an answer per key kind',
  );
});
