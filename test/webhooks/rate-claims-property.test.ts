import fc from 'fast-check';
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import t from 'tap';
import {
  claimDueDeliveries,
  RATE_LOG_STEP_MS,
  RATE_WINDOW_MS,
  type ClaimedDelivery,
} from '../../src/webhooks/claims.js';
import { recordAttempts, type AttemptRecord } from '../../src/webhooks/deliveries.js';
import { freshDatabase } from '../support/db.js';
import { checkProperty } from '../support/properties.js';
import { clearWebhookRows, insertEndpointRow } from './support/endpoint-rows.js';

// The claim against a model of the rate, on real PostgreSQL: two endpoints of one tenant, the first with a rate, the
// second without, claimed by two workers (one at a time and both at once), their attempts ending at chosen times,
// the clock moving in steps. At every claim: what counts against the rate (in flight, ended within the last second,
// and what this claim takes) never exceeds it, the rated endpoint gets exactly the room the model gives it, and the
// endpoint without a rate gets every slot the other leaves.

const START = new Date('2026-11-20T10:00:00.000Z').getTime();
const LEASE_MS = 15_000;
const CAP = 4;
const WORKERS = ['worker-a', 'worker-b'];

type Op =
  | { kind: 'claim'; worker: number; limit: number }
  | { kind: 'claimBoth'; limit: number }
  | { kind: 'finish'; from: number; count: number }
  | { kind: 'advance'; ms: number };

const op: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('claim' as const),
      worker: fc.integer({ min: 0, max: 1 }),
      limit: fc.integer({ min: 1, max: 8 }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant('claimBoth' as const), limit: fc.integer({ min: 1, max: 6 }) }),
  },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('finish' as const),
      from: fc.nat(8),
      count: fc.integer({ min: 1, max: 4 }),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('advance' as const),
      ms: fc.oneof(fc.integer({ min: 1, max: 400 }), fc.constantFrom(5, 990, 1_000, 1_010)),
    }),
  },
);

interface InFlight {
  delivery: ClaimedDelivery;
  endpoint: number;
  owner: string;
}

class Model {
  now = START;
  pending = [0, 0];
  inFlight: InFlight[] = [];
  /** Ends of the rated endpoint's attempts, rounded up as the recording keeps them. */
  ends: number[] = [];
  readonly rate: number;
  constructor(rate: number) {
    this.rate = rate;
  }

  inFlightOf(endpoint: number): number {
    return this.inFlight.filter((f) => f.endpoint === endpoint).length;
  }
  /** What counts against the rate at the model's now. */
  used(): number {
    return this.inFlightOf(0) + this.ends.filter((e) => e + RATE_WINDOW_MS > this.now).length;
  }
  room(endpoint: number): number {
    const cap = CAP - this.inFlightOf(endpoint);
    const rate = endpoint === 0 ? this.rate - this.used() : Infinity;
    return Math.max(0, Math.min(cap, rate, this.pending[endpoint]!));
  }
}

async function claim(pool: pg.Pool, model: Model, worker: number, limit: number): Promise<ClaimedDelivery[]> {
  return claimDueDeliveries(pool, WORKERS[worker]!, new Date(model.now), new Date(model.now + LEASE_MS), {
    limit,
    perEndpoint: CAP,
  });
}

/** Checks the rate over what one instant's claims took together, then puts them in flight in the model. */
function taken(
  model: Model,
  endpoints: string[],
  claims: { owner: string; claimed: ClaimedDelivery[] }[],
): string | null {
  const all = claims.flatMap((c) => c.claimed);
  const counts = [0, 1].map((e) => all.filter((d) => d.endpoint_id === endpoints[e]).length);
  if (model.used() + counts[0]! > model.rate)
    return `the rated endpoint would count ${model.used() + counts[0]!} against its rate of ${model.rate}`;
  for (const { owner, claimed } of claims)
    for (const d of claimed)
      model.inFlight.push({ delivery: d, endpoint: d.endpoint_id === endpoints[0] ? 0 : 1, owner });
  for (const e of [0, 1]) model.pending[e]! -= counts[e]!;
  return null;
}

async function apply(pool: pg.Pool, model: Model, endpoints: string[], o: Op): Promise<string | null> {
  switch (o.kind) {
    case 'claim': {
      const rooms = [model.room(0), model.room(1)];
      const claimed = await claim(pool, model, o.worker, o.limit);
      const counts = [claimed.filter((d) => d.endpoint_id === endpoints[0]).length];
      counts.push(claimed.length - counts[0]!);
      // Within its room each; every slot used while either has room; round-robin: each gets half the slots or its room.
      const fair = [0, 1].every(
        (e) => counts[e]! <= rooms[e]! && counts[e]! >= Math.min(rooms[e]!, Math.floor(o.limit / 2)),
      );
      if (!fair || claimed.length !== Math.min(o.limit, rooms[0]! + rooms[1]!))
        return `claimed ${counts.join(' + ')} of ${o.limit} slots where the model's rooms are ${rooms.join(' + ')}`;
      return taken(model, endpoints, [{ owner: WORKERS[o.worker]!, claimed }]);
    }
    case 'claimBoth': {
      // Two workers at the same instant: the tenant lock lets one claim, or both one after the other.
      const [a, b] = await Promise.all([claim(pool, model, 0, o.limit), claim(pool, model, 1, o.limit)]);
      return taken(model, endpoints, [
        { owner: WORKERS[0]!, claimed: a },
        { owner: WORKERS[1]!, claimed: b },
      ]);
    }
    case 'finish': {
      const done = model.inFlight.splice(Math.min(o.from, model.inFlight.length), o.count);
      if (done.length === 0) return null;
      const records: AttemptRecord[] = done.map(({ delivery }) => ({
        deliveryId: delivery.id,
        leaseUntil: delivery.lease_until,
        attempt: 1,
        ok: true,
        nextAttemptAt: null,
        attemptedAt: new Date(model.now),
        finishedAt: new Date(model.now),
        requestHeaders: {},
        responseStatus: 200,
        responseHeaders: null,
        responseBody: null,
        durationMs: 3,
        error: null,
      }));
      // Each worker records its own attempts, as it would.
      for (const owner of WORKERS) {
        const mine = records.filter((r) => done.find((d) => d.delivery.id === r.deliveryId)!.owner === owner);
        if (mine.length === 0) continue;
        const recorded = await recordAttempts(pool, owner, mine);
        if (recorded.size !== mine.length) return `${mine.length - recorded.size} attempts of ${owner} not recorded`;
        for (const id of recorded.keys())
          if (done.find((d) => d.delivery.id === id)!.endpoint === 0)
            model.ends.push(Math.ceil(model.now / RATE_LOG_STEP_MS) * RATE_LOG_STEP_MS);
      }
      return null;
    }
    case 'advance':
      model.now += o.ms;
      return null;
  }
}

t.test(
  'the rate against its model: never exceeded, its room given exactly, the rest to the other endpoint',
  async (t) => {
    const { pool } = await freshDatabase(t, undefined, 4);
    await checkProperty(
      t,
      'rate claims',
      fc.asyncProperty(
        fc.integer({ min: 1, max: 6 }),
        fc.integer({ min: 3, max: 25 }),
        fc.integer({ min: 0, max: 25 }),
        fc.array(op, { minLength: 5, maxLength: 14 }),
        async (rate, ratedCount, otherCount, ops) => {
          await clearWebhookRows(pool);
          const tenant = randomUUID();
          const endpoints = [
            await insertEndpointRow(pool, tenant, new Date(START)),
            await insertEndpointRow(pool, tenant, new Date(START)),
          ];
          await pool.query('UPDATE webhook_endpoints SET rate_limit_per_second = $2 WHERE id = $1', [
            endpoints[0],
            rate,
          ]);
          for (const [e, count] of [ratedCount, otherCount].entries())
            await pool.query(
              `INSERT INTO webhook_deliveries (id, event_id, endpoint_id, tenant_id, sandbox, event_type, body, status, next_attempt_at, created_at, updated_at)
             SELECT gen_random_uuid(), gen_random_uuid(), $1, $2, false, 'document.uploaded', '{}', 'pending', $3, $3, $3
               FROM generate_series(1, $4)`,
              [endpoints[e], tenant, new Date(START), count],
            );
          const model = new Model(rate);
          model.pending = [ratedCount, otherCount];
          // Leases never lapse here: the clock moves at most 14 × 1,010 ms, under the 15 s lease.
          for (const o of ops) {
            const problem = await apply(pool, model, endpoints, o);
            if (problem) throw new Error(`${JSON.stringify(o)} at +${model.now - START} ms: ${problem}`);
          }
          return true;
        },
      ),
      25,
      // 1110241799: an end rounded up to the next 10 ms was pruned from the rate's log by a later end in the same
      // second while it still counted, so a claim took one more than the rate allowed.
      [1110241799],
    );
  },
);
