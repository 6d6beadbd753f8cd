import { randomUUID } from 'node:crypto';
import t from 'tap';
import { migrate } from '../../src/storage/migrate.js';
import { migrations } from '../../src/storage/migrations/index.js';
import { PurposeBox } from '../../src/shared/secret-box.js';
import { TEST_ENCRYPTION_KEY } from '../support/app.js';
import { appFixture } from '../applications/support.js';
import { configureWebhookRuntime } from '../../src/webhooks/runtime.js';

// Webhook secrets are sealed for their endpoint (docs/decisions.md, "An import changes nothing outside its own workspace"): a sealed secret moved onto another endpoint opens
// for none, and migration 55 re-seals the secrets stored before binding.

t.test('a sealed webhook secret opens for its own endpoint only', async (t) => {
  const box = new PurposeBox(Buffer.from(TEST_ENCRYPTION_KEY, 'base64'), 'webhook-secret');
  const [mine, other] = [randomUUID(), randomUUID()];
  const sealed = box.sealFor(mine, 'whsec_secret');
  t.ok(PurposeBox.isBound(sealed));
  t.equal(box.openFor(mine, sealed), 'whsec_secret');
  t.throws(() => box.openFor(other, sealed), 'moved onto another endpoint, it does not open');
  t.throws(() => box.open(sealed), 'nor unbound');
  const legacy = box.seal('whsec_old');
  t.equal(box.openFor(other, legacy), 'whsec_old', 'a secret sealed before binding still opens');
});

t.test('migration 55 re-seals stored secrets for their endpoint', async (t) => {
  const f = await appFixture(t);
  configureWebhookRuntime(f.app.services, { resolve: async () => [{ address: '93.184.215.14', family: 4 as const }] });
  const created = await f.app.request('/v1/webhooks', {
    method: 'POST',
    key: f.ws.live,
    json: { url: 'https://hooks.example.org/a', events: ['lead.created'] },
  });
  t.equal(created.status, 201);
  const { id, secret } = (await created.json()) as { id: string; secret: string };
  const box = f.app.services.secretBox.webhookSecrets;
  // As stored before migration 0055 (endpoint-bound secrets): sealed for the purpose only.
  await f.app.pool.query('UPDATE webhook_endpoints SET sealed_secret = $2, previous_sealed_secret = $3 WHERE id = $1', [
    id,
    box.seal(secret),
    box.seal('whsec_previous'),
  ]);
  await f.app.pool.query('DELETE FROM schema_migrations WHERE version = 55');
  const previousKey = process.env.SECRET_ENCRYPTION_KEY;
  process.env.SECRET_ENCRYPTION_KEY = TEST_ENCRYPTION_KEY;
  t.teardown(() => {
    if (previousKey === undefined) delete process.env.SECRET_ENCRYPTION_KEY;
    else process.env.SECRET_ENCRYPTION_KEY = previousKey;
  });
  t.same(await migrate(f.app.pool, migrations), [55]);
  const row = (
    await f.app.pool.query<{ sealed_secret: string; previous_sealed_secret: string }>(
      'SELECT sealed_secret, previous_sealed_secret FROM webhook_endpoints WHERE id = $1',
      [id],
    )
  ).rows[0]!;
  t.ok(PurposeBox.isBound(row.sealed_secret) && PurposeBox.isBound(row.previous_sealed_secret), 'both re-sealed');
  t.equal(box.openFor(id, row.sealed_secret), secret);
  t.equal(box.openFor(id, row.previous_sealed_secret), 'whsec_previous');
  t.throws(() => box.openFor(randomUUID(), row.sealed_secret), 'bound to its endpoint');
});
