/**
 * The durable twin of webhook delivery: the queue an integrator would otherwise write, run by bench:webhooks beside
 * the service as the baseline that writes what a delivery must write (docs/benchmarks.md, "bench:webhooks").
 *
 * It keeps the service's delivery rows and attempts in `twin_deliveries` and `twin_delivery_attempts` (the columns,
 * indexes and checks of `webhook_deliveries` and `webhook_delivery_attempts`; no trigger, no queue rows). The backlog
 * is inserted 500 rows a statement, as the fan-out inserts them; then loops, each in a transaction, take the next
 * due rows `FOR UPDATE SKIP LOCKED`, send them signed (Standard Webhooks) to the receiver, update each row with its
 * outcome and append its attempt, and commit. No leases, fairness, per-endpoint order, sequences, retries' schedule,
 * health or event log: what is left is the rows and the HTTPS, the cost no durable delivery can avoid.
 */
import { randomUUID } from 'node:crypto';
import https from 'node:https';
import type pg from 'pg';
import { generateSecret, standardSignatureHeader } from '../src/webhooks/signing.js';

export async function createDeliveryTwinTables(sql: pg.Pool): Promise<void> {
  await sql.query(`
    CREATE TABLE twin_deliveries (LIKE webhook_deliveries INCLUDING ALL);
    CREATE TABLE twin_delivery_attempts (LIKE webhook_delivery_attempts INCLUDING ALL);`);
}

export interface DeliveryTwinRun {
  delivered: number;
  seconds: number;
}

/** Inserts `backlog` pending deliveries of `body` to one endpoint, then delivers them all to `url`. */
export async function runDeliveryTwin(
  sql: pg.Pool,
  options: { url: string; ca: string; backlog: number; body: string; loops: number; batch: number },
): Promise<DeliveryTwinRun> {
  const endpointId = randomUUID();
  const tenantId = randomUUID();
  const secret = generateSecret();
  const agent = new https.Agent({ keepAlive: true, maxSockets: options.loops * options.batch, ca: options.ca });
  const started = performance.now();
  for (let from = 0; from < options.backlog; from += 500) {
    const n = Math.min(500, options.backlog - from);
    await sql.query(
      `INSERT INTO twin_deliveries (id, event_id, endpoint_id, tenant_id, sandbox, event_type, body, status,
                                    next_attempt_at, created_at, updated_at)
       SELECT gen_random_uuid(), gen_random_uuid(), $1, $2, false, 'lead.created', $3, 'pending', now(), now(), now()
         FROM generate_series(1, $4)`,
      [endpointId, tenantId, options.body, n],
    );
  }
  let delivered = 0;
  await Promise.all(
    Array.from({ length: options.loops }, async () => {
      const client = await sql.connect();
      try {
        for (;;) {
          const n = await deliverBatch(client, agent, endpointId, secret, options);
          if (n === 0) break;
          delivered += n;
        }
      } finally {
        client.release();
      }
    }),
  );
  agent.destroy();
  const seconds = (performance.now() - started) / 1000;
  const left = await sql.query<{ n: string }>(
    "SELECT count(*) AS n FROM twin_deliveries WHERE endpoint_id = $1 AND status <> 'succeeded'",
    [endpointId],
  );
  if (Number(left.rows[0]!.n) > 0) throw new Error(`the twin left ${left.rows[0]!.n} deliveries undelivered`);
  return { delivered, seconds };
}

/** One transaction: the next due deliveries locked, sent, their outcomes and attempts written. Returns how many. */
async function deliverBatch(
  client: pg.PoolClient,
  agent: https.Agent,
  endpointId: string,
  secret: string,
  options: { url: string; batch: number },
): Promise<number> {
  await client.query('BEGIN');
  const due = await client.query<{ id: string; event_id: string; body: string; attempts: number }>({
    name: 'twin-claim',
    text: `SELECT id, event_id, body, attempts FROM twin_deliveries
            WHERE endpoint_id = $1 AND status = 'pending' AND next_attempt_at IS NOT NULL AND next_attempt_at <= now()
            ORDER BY next_attempt_at, id LIMIT $2 FOR UPDATE SKIP LOCKED`,
    values: [endpointId, options.batch],
  });
  if (due.rows.length === 0) {
    await client.query('COMMIT');
    return 0;
  }
  const sent = await Promise.all(due.rows.map((d) => send(agent, options.url, secret, d.event_id, d.body)));
  const attempts = due.rows.map((d) => d.attempts + 1);
  const ok = sent.map((s) => s.status >= 200 && s.status < 300);
  await client.query({
    name: 'twin-outcome',
    text: `UPDATE twin_deliveries d SET attempts = o.attempt, last_response_status = o.status, updated_at = now(),
                  status = CASE WHEN o.ok THEN 'succeeded' ELSE 'pending' END,
                  next_attempt_at = CASE WHEN o.ok THEN NULL ELSE now() + interval '1 minute' END
             FROM unnest($1::uuid[], $2::int[], $3::int[], $4::boolean[]) AS o(id, attempt, status, ok)
            WHERE d.id = o.id`,
    values: [due.rows.map((d) => d.id), attempts, sent.map((s) => s.status), ok],
  });
  await client.query({
    name: 'twin-attempts',
    text: `INSERT INTO twin_delivery_attempts (delivery_id, attempt, attempted_at, request_headers, response_status,
                                               response_headers, response_body, duration_ms)
           SELECT o.id, o.attempt, o.at, o.request_headers, o.status, o.response_headers, o.body, o.ms
             FROM unnest($1::uuid[], $2::int[], $3::timestamptz[], $4::jsonb[], $5::int[], $6::jsonb[], $7::text[],
                         $8::int[]) AS o(id, attempt, at, request_headers, status, response_headers, body, ms)`,
    values: [
      due.rows.map((d) => d.id),
      attempts,
      sent.map((s) => s.at),
      sent.map((s) => JSON.stringify(s.requestHeaders)),
      sent.map((s) => s.status),
      sent.map((s) => JSON.stringify(s.responseHeaders)),
      sent.map((s) => s.body),
      sent.map((s) => s.ms),
    ],
  });
  await client.query('COMMIT');
  return due.rows.length;
}

interface Sent {
  at: Date;
  ms: number;
  status: number;
  requestHeaders: Record<string, string>;
  responseHeaders: Record<string, string | string[] | undefined>;
  body: string;
}

function send(agent: https.Agent, url: string, secret: string, messageId: string, body: string): Promise<Sent> {
  const at = new Date();
  const t0 = performance.now();
  const timestamp = Math.floor(at.getTime() / 1000);
  const requestHeaders = {
    'content-type': 'application/json',
    'webhook-id': messageId,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': standardSignatureHeader([secret], messageId, timestamp, body),
  };
  return new Promise<Sent>((resolve, reject) => {
    const req = https.request(url, { method: 'POST', agent, headers: requestHeaders }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({
          at,
          ms: Math.round(performance.now() - t0),
          status: res.statusCode ?? 0,
          requestHeaders,
          responseHeaders: res.headers,
          body: Buffer.concat(chunks).toString('utf8'),
        }),
      );
    });
    req.on('error', reject);
    req.end(body);
  });
}
