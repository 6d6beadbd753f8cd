// Event-store append throughput on PostgreSQL, beside raw single-row insert transactions measured in the same run.
// Run: npm run bench:append   (uses DATABASE_URL, else an embedded PostgreSQL)
import { randomUUID } from 'node:crypto';
import { PostgresEventStore } from '../src/events/postgres-event-store.js';
import { withTransaction } from '../src/storage/postgres.js';
import { benchDatabase, measure, row } from './support.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const db = await benchDatabase();
const store = new PostgresEventStore(db.pool, []);
const tenantId = randomUUID();
const context = () => ({ tenantId, sandbox: false, metadata: { actor: { type: 'system' as const, name: 'bench' }, correlation_id: randomUUID() }, now: new Date() });
const data = { full_name: 'Bench Lead', email: 'bench@example.com', phone: '+919812345678', stage: { key: 'new', name: 'New' } };

await db.pool.query('CREATE TABLE raw_inserts (id uuid PRIMARY KEY, stream_id text NOT NULL, data jsonb NOT NULL, created_at timestamptz NOT NULL DEFAULT now())');
const rawInsert = () =>
  withTransaction(db.pool, (sql) => sql.query('INSERT INTO raw_inserts (id, stream_id, data) VALUES ($1, $2, $3)', [randomUUID(), `lead-${randomUUID()}`, JSON.stringify(data)]));
const append = () => store.transact(context(), [], (tx) => tx.append(`lead-${randomUUID()}`, 'no_stream', [{ type: 'lead.created', data }]));
const appendToHotStream = (stream: string) => () => store.transact(context(), [stream], (tx) => tx.append(stream, 'any', [{ type: 'lead.updated', data }]));

console.log(`Append benchmark on ${db.where}, up to ${SECONDS} s per row\n`);
for (const concurrency of [1, 16, 64]) {
  const raw = await measure(1_000_000, concurrency, SECONDS, rawInsert);
  const events = await measure(1_000_000, concurrency, SECONDS, append);
  console.log(row(`raw single-row insert transactions, ${concurrency} client(s)`, raw));
  console.log(row(`event-store appends (new stream each), ${concurrency} client(s)`, events, raw.perSecond));
}
const hot = await measure(1_000_000, 16, SECONDS, appendToHotStream(`lead-${randomUUID()}`));
console.log(row('event-store appends to one stream, 16 clients', hot));
await db.close();
