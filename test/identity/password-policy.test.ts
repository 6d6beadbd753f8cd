import fc from 'fast-check';
import t from 'tap';
import { issuePasswordResetToken } from '../../src/identity/one-time-tokens.js';
import { passwordWeakness, PASSWORD_REFUSALS } from '../../src/identity/passwords.js';
import { withTransaction } from '../../src/storage/postgres.js';
import { memberOf } from './support.js';
import { consoleFixture, PASSWORD } from '../console/support.js';
import { checkProperty } from '../support/properties.js';

const context = {
  email: 'asha.rao@northstar.example',
  workspaces: [{ name: 'Northstar Visa Consultancy', slug: 'northstar-visa' }],
};

t.test('common, breached and personal passwords are refused with a sentence; long unusual ones pass', async (t) => {
  for (const weak of ['aaaaaaaaaaaa', 'password1234', '123456789012', ' '.repeat(12), 'qwertyuiop123', 'iloveyou2024'])
    t.match(await passwordWeakness(weak, context), PASSWORD_REFUSALS.common, JSON.stringify(weak));
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

t.test(
  'what guessers try before any list: a season or month with a year, the account’s words in leetspeak',
  async (t) => {
    for (const dated of [
      'Summer2026!!',
      'Winter2025!!',
      'Summer2026!Summer',
      'M0ns00n2024!!',
      'September2025#',
      'Dec 2026 dec',
    ])
      t.equal(await passwordWeakness(dated, context), PASSWORD_REFUSALS.dated, JSON.stringify(dated));
    t.equal(await passwordWeakness('Tr0ub4dor&3xx', context), PASSWORD_REFUSALS.common, 'xkcd’s example');
    const wendy = { email: 'wendy@sunrise-visas.example', workspaces: [{ name: 'Sunrise Visas', slug: 'sunrise' }] };
    for (const personal of ['W3ndy@Sunr1se', 'wendy.sunrise!!', '5unr1s3 V1s4s 2026', 'W.E.N.D.Y sunrise'])
      t.equal(await passwordWeakness(personal, wendy), PASSWORD_REFUSALS.personal, JSON.stringify(personal));
    // A date word or the account's name among enough else is no reason to refuse.
    for (const good of [
      'Mayflower orchestra tundra',
      'December blossoms over quiet lagoons',
      'wendy keeps violin tundra',
    ])
      t.equal(await passwordWeakness(good, wendy), undefined, JSON.stringify(good));
    t.match(await passwordWeakness('aaaaaaaaaaaa', context), /^Repeated characters/, 'zxcvbn’s reason comes first');
  },
);

const LEET: Record<string, string[]> = {
  a: ['a', 'A', '4', '@'],
  e: ['e', 'E', '3'],
  i: ['i', '1', '!'],
  o: ['o', '0'],
};
const disguise = (word: string, picks: number[]) =>
  [...word]
    .map((c, i) => (LEET[c] ?? [c, c.toUpperCase()])[picks[i % picks.length]! % (LEET[c]?.length ?? 2)])
    .join('');

t.test('property: any season or month, any year, disguised and padded with symbols, is refused', async (t) => {
  const words = ['spring', 'summer', 'autumn', 'winter', 'monsoon', 'january', 'april', 'july', 'august', 'october'];
  await checkProperty(
    t,
    'dated passwords',
    fc.asyncProperty(
      fc.constantFrom(...words),
      fc.integer({ min: 1950, max: 2099 }),
      fc.array(fc.nat(3), { minLength: 1, maxLength: 8 }),
      fc.stringMatching(/^[!@#$%^&*.?]{0,4}$/),
      fc.boolean(),
      async (word, year, picks, symbols, yearFirst) => {
        const body = yearFirst ? `${year}${disguise(word, picks)}` : `${disguise(word, picks)}${year}`;
        const password = `${body}${symbols}`.padEnd(12, '!');
        return (await passwordWeakness(password, context)) === PASSWORD_REFUSALS.dated;
      },
    ),
    200,
  );
});

const refused = ['aaaaaaaaaaaa', 'password1234', '123456789012', ' '.repeat(12)];

t.test('every place a password is set refuses them: the change form, a reset, an invitation', async (t) => {
  const f = await consoleFixture(t);
  const viewer = f.client();
  await viewer.signIn(memberOf('viewer'));
  for (const weak of [...refused, memberOf('viewer'), `${f.ws.workspace.name} 2026`]) {
    const answer = await viewer.post('/console/account/password', { current: PASSWORD, password: weak, confirm: weak });
    t.equal(answer.status, 400, JSON.stringify(weak));
    t.match(answer.text, /first thing a guesser tries|Attackers try passwords like this one first/);
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
    t.match(answer.text, /first thing a guesser tries|Attackers try passwords like this one first/);
  }
  t.equal((await f.client().post(`/console/reset/${token}`, { password: PASSWORD, confirm: PASSWORD })).status, 303);
});
