import { execFileSync } from 'node:child_process';
import t from 'tap';
import { startServiceProcess, type ServiceProcess } from '../support/service-process.js';
import { Webhook } from 'standardwebhooks';
import { LEASE_MS } from '../../src/subscribers/webhook-delivery-worker.js';
import { TEST_ENCRYPTION_KEY } from '../support/app.js';
import { leadBody } from '../leads/helpers.js';
import { webhookHarness } from './support/harness.js';
import { sleep, waitFor, type ReceivedRequest } from './support/receiver.js';

// Three service processes (the real `visa-crm serve`) on one database and one Redis, all running the workers. Leads
// are created through all three while one endpoint answers slowly; one process is killed with SIGKILL while
// deliveries are in flight. Every event must reach every subscribed endpoint with its id unchanged, and a delivery
// id may arrive twice only when the killed process had sent it and its lease ran out.

const seed = process.env.MP_SEED ? Number(process.env.MP_SEED) : Math.floor(Math.random() * 2 ** 31);

/** mulberry32: a small seeded generator, so a failing run can be replayed with MP_SEED. */
function random(s: number): () => number {
  return () => {
    s = (s + 0x6d2b79f5) | 0;
    let r = Math.imul(s ^ (s >>> 15), 1 | s);
    r = (r + Math.imul(r ^ (r >>> 7), 61 | r)) ^ r;
    return ((r ^ (r >>> 14)) >>> 0) / 4294967296;
  };
}

t.test('three service processes deliver every event once, but for what a killed one had in flight', async (t) => {
  t.comment(`seed ${seed} (MP_SEED=${seed} replays the choices)`);
  const rand = random(seed);
  const h = await webhookHarness(t, {
    definition: {
      limits: {
        rate: {
          scopes: {
            'webhooks:manage': { capacity: 1000, refill_per_second: 100 },
            'leads:create': { capacity: 1000, refill_per_second: 500 },
            'leads:update': { capacity: 1000, refill_per_second: 500 },
          },
        },
      },
    },
  });
  // /slow answers after 1.5 s, so deliveries are in flight when a process dies; /fast at once.
  h.receiver.reply = (request) => (request.path === '/slow' ? { status: 200, delayMs: 1_500 } : { status: 204 });
  const slow = await h.createEndpoint({
    url: h.receiver.url('127.0.0.1', '/slow'),
    events: ['lead.created', 'lead.updated'],
  });
  const fast = await h.createEndpoint({ url: h.receiver.url('127.0.0.1', '/fast'), events: ['lead.created'] });

  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL: h.services.config.databaseUrl!,
    SECRET_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY,
    WEBHOOK_ALLOW_LOOPBACK: 'true',
    NODE_EXTRA_CA_CERTS: h.pki.caFile,
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'info',
    RUN_WORKERS: 'true',
  };
  const services = await Promise.all([0, 1, 2].map(() => startServiceProcess(env)));
  t.teardown(() => {
    for (const s of services) if (s.child.exitCode === null && s.child.signalCode === null) s.child.kill('SIGKILL');
  });

  const createLead = async (service: ServiceProcess): Promise<string> => {
    for (;;) {
      const response = await fetch(`${service.baseUrl}/v1/leads`, {
        method: 'POST',
        headers: { authorization: `Bearer ${h.ws.live}`, 'content-type': 'application/json' },
        body: JSON.stringify(leadBody()),
      });
      const body = (await response.json()) as { id: string };
      if (response.status === 201 || response.status === 200) return body.id;
      if (response.status !== 429) throw new Error(`POST /v1/leads answered ${response.status}`);
      await sleep(200);
    }
  };
  const updateLead = async (service: ServiceProcess, id: string): Promise<void> => {
    const response = await fetch(`${service.baseUrl}/v1/leads/${id}`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${h.ws.live}`, 'content-type': 'application/json' },
      body: JSON.stringify({ temperature: 'hot' }),
    });
    await response.arrayBuffer();
    if (response.status !== 200) throw new Error(`PATCH /v1/leads/${id} answered ${response.status}`);
  };
  const load = async (through: ServiceProcess[], count: number) => {
    await Promise.all(
      Array.from({ length: count }, async (_, i) => {
        const service = through[i % through.length]!;
        const id = await createLead(service);
        if (rand() < 0.5) await updateLead(through[(i + 1) % through.length]!, id);
      }),
    );
  };

  await load(services, 30);
  const slowInFlight = 1 + Math.floor(rand() * 3);
  // Kill a process while it has a delivery in flight: the one that sent a /slow request not yet answered (the
  // sending process is found from the connection's ports with `ss`). Both ends are named: an ephemeral port can be in
  // use at once by other connections to other addresses, and a request may be answered before it is looked up.
  const unanswered = () => h.receiver.requests.filter((r) => r.path === '/slow' && Date.now() - r.receivedAt < 1_000);
  const senderOf = (request: ReceivedRequest) => {
    const sockets = execFileSync(
      'ss',
      ['-Htnp', 'state', 'established', `( sport = :${request.remotePort} and dport = :${h.receiver.port} )`],
      { encoding: 'utf8' },
    );
    const pid = Number(/pid=(\d+)/.exec(sockets)?.[1]);
    return services.find((s) => s.child.pid === pid);
  };
  const { chosen, victim } = await waitFor(
    () => {
      const candidates = unanswered();
      if (candidates.length < slowInFlight) return undefined;
      const request = candidates[Math.floor(rand() * candidates.length)]!;
      const sender = senderOf(request);
      return sender && { chosen: request, victim: sender };
    },
    'a service process has deliveries in flight to the slow endpoint',
    60_000,
  );
  victim.child.kill('SIGKILL');
  await victim.exited;
  const survivors = services.filter((s) => s !== victim);
  await load(survivors, 30);

  const expected = await h.pool.query<{ id: string; type: string }>(
    "SELECT id, type FROM events WHERE type IN ('lead.created', 'lead.updated') AND tenant_id = $1",
    [h.ws.workspace.id],
  );
  const wanted = expected.rows.flatMap((e) => [
    ...(['lead.created', 'lead.updated'].includes(e.type) ? [`/slow ${e.id}`] : []),
    ...(e.type === 'lead.created' ? [`/fast ${e.id}`] : []),
  ]);
  const arrived = () => new Set(h.receiver.requests.map((r) => `${r.path} ${String(r.headers['webhook-id'])}`));
  // The killed process's leases run out after LEASE_MS; give the survivors that and time to send.
  await waitFor(() => wanted.every((w) => arrived().has(w)), 'every event reached every subscribed endpoint', 90_000);
  await waitFor(
    async () => (await h.pool.query("SELECT 1 FROM webhook_deliveries WHERE status <> 'succeeded'")).rowCount === 0,
    'every delivery is recorded as succeeded',
    60_000,
  );
  t.ok(wanted.length >= 60 + 30, `${wanted.length} (event, endpoint) pairs arrived`);

  const byDelivery = new Map<string, ReceivedRequest[]>();
  for (const r of h.receiver.requests) {
    const id = String(r.headers['x-service-delivery']);
    byDelivery.set(id, [...(byDelivery.get(id) ?? []), r]);
  }
  const deliveries = await h.pool.query<{ id: string; event_id: string; endpoint_id: string }>(
    'SELECT id, event_id, endpoint_id FROM webhook_deliveries',
  );
  t.equal(deliveries.rows.length, wanted.length, 'one delivery per (event, endpoint): the fan-outs did not repeat');
  const secrets = new Map([
    [slow.id, new Webhook(slow.secret)],
    [fast.id, new Webhook(fast.secret)],
  ]);
  const attempts = await h.pool.query<{ delivery_id: string; n: number }>(
    'SELECT delivery_id, count(*)::int AS n FROM webhook_delivery_attempts GROUP BY delivery_id',
  );
  const recorded = new Map(attempts.rows.map((a) => [a.delivery_id, a.n]));
  // Checked delivery by delivery; the problems are reported together, so the log stays readable.
  const problems: string[] = [];
  let repeated = 0;
  for (const d of deliveries.rows) {
    const received = byDelivery.get(d.id) ?? [];
    if (received.length === 0) problems.push(`delivery ${d.id} never arrived`);
    for (const r of received) {
      if (r.headers['webhook-id'] !== d.event_id) problems.push(`delivery ${d.id}: webhook-id is not the event id`);
      if ((JSON.parse(r.body) as { id: string }).id !== d.event_id) problems.push(`delivery ${d.id}: body id changed`);
      try {
        secrets.get(d.endpoint_id)!.verify(r.body, r.headers as Record<string, string>);
      } catch {
        problems.push(`delivery ${d.id}: signature does not verify`);
      }
    }
    if (received.length > 1) {
      repeated++;
      const [first, ...again] = received;
      // Every send by a process that lived to see the answer is recorded as an attempt; the killed process's send
      // is the one that is not. A repeat is legitimate only as that: exactly one unrecorded send. (When the receiver
      // read the killed process's request says nothing: bytes it sent before dying may be read after the kill.)
      const unrecorded = received.length - (recorded.get(d.id) ?? 0);
      if (unrecorded !== 1)
        problems.push(
          `delivery ${d.id} was sent ${received.length} times with ${recorded.get(d.id) ?? 0} attempts recorded: ` +
            'more than the killed process could have sent unrecorded',
        );
      for (const r of again) {
        if (r.receivedAt < first!.receivedAt + LEASE_MS - 1_000)
          problems.push(
            `delivery ${d.id} was sent again ${r.receivedAt - first!.receivedAt} ms later, inside its lease`,
          );
        if (r.body !== first!.body) problems.push(`delivery ${d.id} was sent again with another body`);
      }
    }
  }
  t.same(problems, [], 'every delivery: same ids, valid signature, repeated only after its lease');
  t.comment(`${repeated} deliveries were sent again after the kill; ${slowInFlight}+ were in flight to /slow`);
  t.ok(
    byDelivery.get(String(chosen.headers['x-service-delivery']))!.length >= 2,
    'the delivery the killed process had in flight was sent again by a survivor, once its lease ran out',
  );
  t.ok(repeated <= 128, `${repeated} deliveries were sent again after the kill (at most what was in flight)`);
});
