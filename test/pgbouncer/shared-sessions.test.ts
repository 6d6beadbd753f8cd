import t from 'tap';
import { randomUUID } from 'node:crypto';
import { createPool } from '../../src/storage/postgres.js';
import { recordAttempts, type AttemptRecord } from '../../src/webhooks/deliveries.js';
import { freshDatabase } from '../support/db.js';
import { pgbouncerSkipReason, startPgBouncer } from '../support/pgbouncer.js';
import { insertEndpointRow, leaseAsAnotherClaim } from '../webhooks/support/endpoint-rows.js';

// Behind a transaction pooler, consecutive statements of one client connection may run on different server sessions,
// and statements of different client connections on the same one. With one server connection and four client
// connections, every statement lands on the session the others used: a named prepared statement then either exists
// already (42P05) or is missing (26000). The recording of attempts once was one.

const skip = pgbouncerSkipReason();
const OWNER = 'worker-behind-the-pooler';
const AT = new Date('2026-11-26T10:00:00.000Z');

const LEASE_UNTIL = new Date(AT.getTime() + 60_000);

function succeeded(deliveryId: string): AttemptRecord {
  return {
    deliveryId,
    leaseUntil: LEASE_UNTIL.getTime(),
    attempt: 1,
    ok: true,
    nextAttemptAt: null,
    attemptedAt: AT,
    finishedAt: AT,
    requestHeaders: { 'content-type': 'application/json' },
    responseStatus: 204,
    responseHeaders: {},
    responseBody: '',
    durationMs: 4,
    error: null,
  };
}

t.test('attempts recorded from four client connections sharing one server session', { skip }, async (t) => {
  const { pool: direct, url } = await freshDatabase(t, undefined, 2);
  const bouncer = await startPgBouncer(t, { poolSize: 1 });
  const pooled = createPool(bouncer.url(new URL(url).pathname.slice(1)), 4);
  t.teardown(() => pooled.end());
  const tenant = randomUUID();
  const endpoint = await insertEndpointRow(direct, tenant, AT, 'lead.created');
  const leased = await direct.query<{ id: string }>(
    `INSERT INTO webhook_deliveries (id, event_id, endpoint_id, tenant_id, sandbox, event_type, body, status,
                                     next_attempt_at, created_at, updated_at)
     SELECT gen_random_uuid(), gen_random_uuid(), $1, $2, false, 'lead.created', '{}', 'pending', $3, $3, $3
       FROM generate_series(1, 16) RETURNING id`,
    [endpoint, tenant, AT],
  );
  const ids = leased.rows.map((r) => r.id);
  await leaseAsAnotherClaim(direct, endpoint, ids, OWNER, LEASE_UNTIL);
  // Two rounds of four at once: each client connection sends the statement twice, on whichever session is free.
  for (const round of [ids.slice(0, 8), ids.slice(8)]) {
    const batches = [0, 2, 4, 6].map((i) => round.slice(i, i + 2).map(succeeded));
    const answers = await Promise.all(batches.map((batch) => recordAttempts(pooled, OWNER, batch)));
    t.same(
      answers.map((answer) => answer.size),
      [2, 2, 2, 2],
      'every batch answers for its two deliveries',
    );
  }
  t.equal(pooled.totalCount, 4, 'through four client connections');
  t.same(await bouncer.serverPids(new URL(url).pathname.slice(1)).then((pids) => pids.length), 1, 'on one session');
  const recorded = await direct.query<{ deliveries: number; attempts: number }>(
    `SELECT count(*)::int AS deliveries,
            (SELECT count(*)::int FROM webhook_delivery_attempts WHERE delivery_id = ANY ($1::uuid[])) AS attempts
       FROM webhook_deliveries WHERE id = ANY ($1::uuid[]) AND status = 'succeeded'`,
    [ids],
  );
  t.same(recorded.rows[0], { deliveries: 16, attempts: 16 }, 'each delivery recorded once, with its attempt');
  const prepared = await pooled.query<{ n: number }>('SELECT count(*)::int AS n FROM pg_prepared_statements');
  t.equal(prepared.rows[0]!.n, 0, 'the shared session holds no named statement');
});
