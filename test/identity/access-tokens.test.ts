import t from 'tap';
import { ensureAccount } from '../../src/identity/accounts.js';
import { createAccessToken, revokeAccessToken } from '../../src/identity/access-tokens.js';
import { seedWorkspace, startApp, TestClock } from '../support/app.js';

t.test('personal access tokens: stored hashed, expiring, revocable', async (t) => {
  const clock = new TestClock();
  const app = await startApp(t, {
    now: clock.now,
    config: { adminToken: 'operator-token-for-token-tests-0123456789' },
  });
  const ws = await seedWorkspace(app);
  const owner = ws.workspace.settings.users.find((u) => u.role === 'owner')!;
  const account = await ensureAccount(app.pool, owner, clock.now());
  const make = (hours: number) =>
    createAccessToken(app.pool, {
      accountId: account.id,
      tenantId: ws.workspace.id,
      role: owner.role,
      name: 'test',
      expiresAt: new Date(clock.now().getTime() + hours * 3600_000),
      now: clock.now(),
      madeWithPasskey: false,
    });
  const list = (value: string) =>
    app.request(`/admin/v1/workspaces/${ws.workspace.slug}/webhooks`, {
      headers: { authorization: `Bearer ${value}` },
    });

  const short = await make(1);
  t.match(short.value, /^vcrm_pat_[A-Za-z0-9_-]{43}$/);
  const stored = await app.pool.query<{ token_hash: Buffer }>(
    'SELECT token_hash FROM staff_access_tokens WHERE id = $1',
    [short.token.id],
  );
  t.equal(stored.rows[0]!.token_hash.length, 32, 'only a SHA-256 is stored');
  t.equal(short.token.last_four, short.value.slice(-4));
  t.equal((await list(short.value)).status, 200);
  clock.advance(3600_000);
  t.equal((await list(short.value)).status, 401, 'expired');

  const revocable = await make(24);
  t.equal((await list(revocable.value)).status, 200);
  t.ok(await revokeAccessToken(app.pool, account.id, revocable.token.id, clock.now()));
  t.equal((await list(revocable.value)).status, 401, 'revoked');
  t.notOk(await revokeAccessToken(app.pool, account.id, revocable.token.id, clock.now()), 'once');
});
