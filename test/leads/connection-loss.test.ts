import t from 'tap';
import { leadBody, leadsFixture } from './helpers.js';

/**
 * pg emits 'error' on a checked-out client whose connection dies, besides failing its query; with no listener
 * that would end the process. A capture whose database session is killed must fail alone.
 */
t.test('a database session killed in the middle of a capture fails that request alone', async (t) => {
  const f = await leadsFixture(t);
  await f.pool.query(`CREATE FUNCTION slow_lead() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN IF NEW.body->>'full_name' = 'Slow Person' THEN PERFORM pg_sleep(5); END IF; RETURN NEW; END $$`);
  // Deferred to COMMIT: the session is killed while the capture's COMMIT is under way, when it may have committed.
  await f.pool.query(`CREATE CONSTRAINT TRIGGER slow_lead AFTER INSERT ON leads DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION slow_lead()`);

  const slow = f.post(leadBody({ full_name: 'Slow Person' }));
  let killed = false;
  for (let i = 0; i < 500 && !killed; i++) {
    const found = await f.pool.query<{ pid: number }>(
      `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND wait_event = 'PgSleep'`,
    );
    if (found.rows[0])
      killed = (await f.pool.query('SELECT pg_terminate_backend($1) AS ok', [found.rows[0].pid])).rows[0].ok === true;
    else await new Promise((resolve) => setTimeout(resolve, 10));
  }
  t.ok(killed, 'the capture’s session was terminated while it waited');
  const answer = await slow;
  t.equal(answer.status, 500);
  t.equal(answer.body.error, 'internal_error');
  t.notMatch(JSON.stringify(answer.body), /terminat|Connection|pg_/i, 'nothing internal in the body');

  for (let i = 0; i < 3; i++) t.equal((await f.post(leadBody())).status, 201, 'the service goes on serving');
  t.equal(
    (await f.pool.query(`SELECT 1 FROM leads WHERE body->>'full_name' = 'Slow Person'`)).rowCount,
    0,
    'nothing of the killed capture was kept',
  );
});
