import t from 'tap';
import { PgCode } from '../../src/storage/postgres.js';
import { TestClock } from '../support/app.js';
import { recordSql } from '../support/sql-recorder.js';
import { leadBody, leadsFixture } from './helpers.js';

/**
 * A capture alone, without an Idempotency-Key, guesses "new lead" and sends its whole transaction in one round
 * trip behind vcrm_expect; when the guess is wrong the check fails the transaction and the capture runs the
 * ordinary way. These tests watch what goes to the server.
 */

/** The statements of capture transactions: what begins with BEGIN through what ends with COMMIT or ROLLBACK. */
const transactionTexts = (sent: string[]) => sent.filter((text) => /(^|\n)(BEGIN|COMMIT|ROLLBACK)(;|$)/.test(text));

t.test('a new person, alone: one round trip, BEGIN to COMMIT, with the check in front of the writes', async (t) => {
  const f = await leadsFixture(t);
  const sent = recordSql(t);
  await f.post(leadBody()); // warms the key cache and prepares the statements, so the second capture sends only EXECUTEs
  const check = /PREPARE (\w+) AS SELECT vcrm_expect\(/.exec(sent.join('\n'))?.[1];
  t.ok(check, 'the check is vcrm_expect');
  sent.length = 0;
  const created = await f.post(leadBody());
  t.equal(created.status, 201);
  const texts = transactionTexts(sent);
  t.equal(texts.length, 1, 'one round trip');
  const statements = texts[0]!.split(';\n').map((s) => s.split('(')[0]);
  t.equal(statements[0], 'BEGIN');
  t.match(statements[1], /^SET LOCAL application_name = 'vcrm-w:/, 'the registration');
  t.match(statements[2], /^EXECUTE vcrm_\w+$/, 'the locks');
  t.equal(statements[3], `EXECUTE ${check}`, 'the check, ahead of the writes');
  t.equal(statements.at(-1), 'COMMIT', 'then the writes and COMMIT');
  t.ok(statements.length >= 7, 'event, read model and quota counter');
  const row = await f.pool.query<{ updated_at: Date; created_at: Date }>('SELECT updated_at, created_at FROM leads WHERE id = $1', [created.body.id]);
  t.equal(row.rowCount, 1);
});

t.test('a wrong guess (the person exists): nothing of it is written and the duplicate is answered the ordinary way', async (t) => {
  const f = await leadsFixture(t);
  const body = leadBody();
  const first = await f.post(body);
  const sent = recordSql(t);
  const again = await f.post({ ...body, full_name: 'Priya S.' });
  t.same([again.status, again.body], [200, { id: first.body.id, duplicate: true }]);
  const texts = transactionTexts(sent);
  t.equal(texts.length, 4, 'the guess, its ROLLBACK, then the ordinary two round trips');
  t.match(texts[0], /COMMIT$/);
  t.equal(texts[1], 'ROLLBACK');
  t.match(texts[2], /^(PREPARE[^]*?;\n)*BEGIN;/);
  t.equal((await f.pool.query('SELECT 1 FROM leads WHERE tenant_id = $1', [f.workspace.id])).rowCount, 1, 'still one lead');
  t.equal((await f.pool.query(`SELECT 1 FROM events WHERE type = 'lead.created'`)).rowCount, 1, 'and one lead.created');
});

t.test('a lead carrying a time at or after the registered one: the guess is refused and the ordinary way reads its time', async (t) => {
  const clock = new TestClock();
  const f = await leadsFixture(t, { now: clock.now });
  const later = await f.post(leadBody());
  clock.advance(-60_000); // this process's clock went back a minute (or another process's runs a minute ahead)
  const sent = recordSql(t);
  const earlier = await f.post(leadBody());
  t.equal(earlier.status, 201, 'the lead is still created');
  t.equal(transactionTexts(sent)[1], 'ROLLBACK', 'after the guess was refused');
  const times = await f.pool.query<{ id: string; updated_at: Date }>('SELECT id, updated_at FROM leads ORDER BY updated_at');
  t.same(
    times.rows.map((r) => r.id),
    [earlier.body.id, later.body.id],
  );
});

t.test('vcrm_expect fails its transaction with VC001 unless its condition is true', async (t) => {
  const f = await leadsFixture(t);
  t.same((await f.pool.query('SELECT vcrm_expect(true, $1) AS ok', ['x'])).rows, [{ ok: true }]);
  for (const condition of ['false', 'NULL']) {
    await t.rejects(f.pool.query(`SELECT vcrm_expect(${condition}, 'a new lead')`), { code: PgCode.expectationFailed, message: 'expectation failed: a new lead' }, `${condition} fails`);
  }
});
