import t from 'tap';
import { issuePasswordResetToken } from '../../src/identity/one-time-tokens.js';
import { passwordWeakness, PASSWORD_REFUSALS } from '../../src/identity/passwords.js';
import { withTransaction } from '../../src/storage/postgres.js';
import { memberOf } from './support.js';
import { consoleFixture, PASSWORD } from '../console/support.js';

const context = {
  email: 'asha.rao@northstar.example',
  workspaces: [{ name: 'Northstar Visa Consultancy', slug: 'northstar-visa' }],
};

t.test('common, breached and personal passwords are refused with a sentence; long unusual ones pass', async (t) => {
  for (const weak of ['aaaaaaaaaaaa', 'password1234', '123456789012', ' '.repeat(12), 'qwertyuiop123', 'iloveyou2024'])
    t.equal(await passwordWeakness(weak, context), PASSWORD_REFUSALS.common, JSON.stringify(weak));
  for (const personal of [
    'asha.rao@northstar.example',
    'Asha.Rao@Northstar.Example',
    'northstarvisa2026',
    'Northstar Visa Consultancy',
    'asharao-123456',
  ])
    t.ok(await passwordWeakness(personal, context), JSON.stringify(personal));
  t.equal(await passwordWeakness('asha.rao@northstar.example', context), PASSWORD_REFUSALS.personal);
  t.equal(await passwordWeakness('short', context), PASSWORD_REFUSALS.short);
  t.equal(await passwordWeakness('x'.repeat(257), context), PASSWORD_REFUSALS.long);
  for (const good of [PASSWORD, 'plum tractor violin ninety', 'Kv7#pq2!Lm9$zT', 'żółw jedzie rowerem nad morzem'])
    t.equal(await passwordWeakness(good, context), undefined, `${JSON.stringify(good)} passes`);
  // No composition rule: spaces, lower case only, no digit are all fine when the whole is hard to guess.
  t.equal(await passwordWeakness('quiet lantern orbit meadow', context), undefined);
  const started = process.hrtime.bigint();
  await passwordWeakness('correct horse '.repeat(18), context);
  t.ok(Number(process.hrtime.bigint() - started) / 1e6 < 2_000, 'a 256-character password is checked quickly');
});

const refused = ['aaaaaaaaaaaa', 'password1234', '123456789012', ' '.repeat(12)];

t.test('every place a password is set refuses them: the change form, a reset, an invitation', async (t) => {
  const f = await consoleFixture(t);
  const viewer = f.client();
  await viewer.signIn(memberOf('viewer'));
  for (const weak of [...refused, memberOf('viewer'), `${f.ws.workspace.name} 2026`]) {
    const answer = await viewer.post('/console/account/password', { current: PASSWORD, password: weak, confirm: weak });
    t.equal(answer.status, 400, JSON.stringify(weak));
    t.match(answer.text, /first thing a guesser tries|attackers try first/);
  }
  t.equal((await f.client().signIn(memberOf('viewer'))).status, 303, 'the password did not change');

  // An invitation (no SMTP: the inviter is shown the link) and a reset link, both on the same form.
  const owner = f.client();
  await owner.signIn(memberOf('owner'));
  const invited = await owner.post(`/console/w/${f.ws.workspace.slug}/members/invite`, {
    name: 'New Person',
    email: 'new.person@northstar.example',
    role: 'viewer',
    password: PASSWORD,
  });
  const link = /\/console\/invitation\/[A-Za-z0-9_-]+/.exec(invited.text)?.[0];
  t.ok(link, 'the invitation link');
  const person = f.client();
  for (const weak of [...refused, 'new.person@northstar.example']) {
    const answer = await person.post(link!, { password: weak, confirm: weak });
    t.equal(answer.status, 400, `invitation: ${JSON.stringify(weak)}`);
  }
  t.equal((await person.get(link!)).status, 200, 'the link still works after refusals');
  t.equal((await person.post(link!, { password: PASSWORD, confirm: PASSWORD })).status, 303);

  const account = await f.app.pool.query<{ id: string }>('SELECT id FROM staff_accounts WHERE email = $1', [
    memberOf('manager'),
  ]);
  const token = await withTransaction(f.app.pool, (sql) =>
    issuePasswordResetToken(sql, { accountId: account.rows[0]!.id, now: new Date(), lifetimeMs: 60_000 }),
  );
  for (const weak of [...refused, memberOf('manager')]) {
    const answer = await f.client().post(`/console/reset/${token}`, { password: weak, confirm: weak });
    t.equal(answer.status, 400, `reset: ${JSON.stringify(weak)}`);
    t.match(answer.text, /first thing a guesser tries|attackers try first/);
  }
  t.equal((await f.client().post(`/console/reset/${token}`, { password: PASSWORD, confirm: PASSWORD })).status, 303);
});
