import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import type { Test } from 'tap';
import { interleavingGates, type InterleavingPoint } from '../../src/commands/person-locks.js';
import { readAllWith } from '../../src/events/postgres-event-store.js';
import { FANOUT_SUBSCRIPTION, fanOutBatch, type FanOutResult } from '../../src/subscribers/webhook-fanout.js';
import { searchEverywhere } from '../support/search-everywhere.js';
import { webhookHarness, type Harness } from '../webhooks/support/harness.js';

/** A person with a name, phone and email of their own, which a search must not find once they are erased. */
export interface Person {
  id: string;
  name: string;
  phone: string;
  email: string;
}

/** Holds at interleaving points: each hold stops the first caller that reaches its point (for its person). */
export class Gates {
  private readonly holds: {
    point: InterleavingPoint;
    person: string | undefined;
    reached: () => void;
    release: Promise<void>;
  }[] = [];

  constructor(t: Test) {
    interleavingGates.at = (point, person) => this.at(point, person);
    t.teardown(() => {
      interleavingGates.at = undefined;
    });
  }

  /** Stops the next caller at `point` (of `person`, when named) until `release()`; `reached` settles once stopped. */
  hold(point: InterleavingPoint, person?: string): { reached: Promise<void>; release: () => void } {
    let reached!: () => void;
    let release!: () => void;
    const reachedPromise = new Promise<void>((resolve) => (reached = resolve));
    const releasePromise = new Promise<void>((resolve) => (release = resolve));
    this.holds.push({ point, person, reached, release: releasePromise });
    return { reached: reachedPromise, release };
  }

  /** Forgets the holds nobody reached. */
  clear(): void {
    this.holds.length = 0;
  }

  private async at(point: InterleavingPoint, person: string): Promise<void> {
    const i = this.holds.findIndex((h) => h.point === point && (h.person === undefined || h.person === person));
    if (i < 0) return;
    const [hold] = this.holds.splice(i, 1);
    hold!.reached();
    await hold!.release;
  }
}

/** Waits until `n` backends of this database wait for a lock (another side holds the lock the test arranged). */
export async function waitForLockWaiters(h: Pick<Harness, 'pool'>, n = 1): Promise<void> {
  for (;;) {
    const waiting = await h.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_stat_activity
        WHERE datname = current_database() AND wait_event_type = 'Lock'`,
    );
    if (waiting.rows[0]!.n >= n) return;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

export interface RaceFixture {
  h: Harness;
  person(): Promise<Person>;
  createTask(person: Person, title: string): Promise<Response>;
  issueInvoice(person: Person, line: string): Promise<Response>;
  uploadDocument(person: Person, name: string): Promise<Response>;
  erase(person: Person): Promise<Response>;
  /** Fans out every event committed so far. */
  fanOut(): Promise<void>;
  /** Runs fan-out batches until one reads events; its result. */
  fanOutOnce(): Promise<FanOutResult>;
  /** Where the person's name, phone or email can still be read: tables, the log as the service opens it, files. */
  traces(person: Person): Promise<string[]>;
}

/** The app with a webhook endpoint (for delivery bodies) and no workers: the test drives the fan-out. */
export async function raceFixture(t: Test): Promise<RaceFixture> {
  const h = await webhookHarness(t);
  await h.createEndpoint({ url: h.receiver.url(), events: ['lead.created', 'lead.updated', 'invoice.issued'] });
  await fanOutBatch(h.pool, h.services.personalData, h.services.now()); // the first one only records the checkpoint
  const dataDir = h.services.config.dataDir;
  return {
    h,
    async person() {
      const tag = randomBytes(4).toString('hex');
      const name = `Asha Rao ${tag}`;
      const email = `asha.${tag}@example.org`;
      const phone = `+9198${String(parseInt(tag, 16) % 100_000_000).padStart(8, '0')}`;
      const response = await h.request('/v1/leads', {
        method: 'POST',
        key: h.ws.live,
        json: { full_name: name, phone, email, consent: true },
      });
      if (response.status !== 201) throw new Error(`lead: ${response.status} ${await response.text()}`);
      const id = ((await response.json()) as { id: string }).id;
      return { id, name, phone, email };
    },
    createTask: (p, title) =>
      h.admin('POST', '/tasks', { lead_id: p.id, title, due_at: new Date(Date.now() + 3_600_000).toISOString() }),
    issueInvoice: (p, line) =>
      h.admin('POST', '/invoices', {
        lead_id: p.id,
        currency: 'INR',
        line_items: [{ description: line, quantity: 1, unit_amount: 1000 }],
        due_date: '2026-12-31',
      }),
    uploadDocument(p, name) {
      const body = new FormData();
      body.set('type', 'passport');
      body.set('lead_id', p.id);
      body.set('file', new Blob([`%PDF-1.4\n%${name}\n%%EOF\n`], { type: 'application/pdf' }), `${name}.pdf`);
      return h.request(`/admin/v1/workspaces/${h.ws.workspace.slug}/documents`, {
        method: 'POST',
        headers: { authorization: `Bearer ${h.ws.staffToken}` },
        body,
      });
    },
    erase: (p) => h.admin('POST', `/leads/${p.id}/erase`),
    async fanOut() {
      const last = await h.pool.query<{ tx: string; position: string }>(
        'SELECT tx_id::text AS tx, position::text FROM events ORDER BY tx_id DESC, position DESC LIMIT 1',
      );
      const target = last.rows[0];
      if (!target) return;
      for (;;) {
        const result = await fanOutBatch(h.pool, h.services.personalData, h.services.now());
        const passed = await h.pool.query<{ done: boolean }>(
          'SELECT (tx_id, position) >= ($2::xid8, $3::bigint) AS done FROM subscription_checkpoints WHERE name = $1',
          [FANOUT_SUBSCRIPTION, target.tx, target.position],
        );
        if (passed.rows[0]?.done) return;
        // Events settle once every older transaction of the server has ended (other databases' included).
        if (result.events === 0) await new Promise((resolve) => setTimeout(resolve, 10));
      }
    },
    async fanOutOnce() {
      for (;;) {
        const result = await fanOutBatch(h.pool, h.services.personalData, h.services.now());
        if (result.events > 0) return result;
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    },
    async traces(p) {
      const needles = [p.name, p.phone, p.email];
      const found = (await searchEverywhere(h.pool, needles)).map((hit) => `${hit.table}.${hit.column}`);
      const events = await readAllWith(h.pool, { txId: '0', position: 0 }, 1_000_000, false, h.services.personalData);
      for (const event of events)
        if (needles.some((n) => JSON.stringify(event.data).includes(n))) found.push(`event ${event.streamId}`);
      for (const file of filesUnder(dataDir))
        if (needles.some((n) => readFileSync(file).includes(n))) found.push(`file ${path.relative(dataDir, file)}`);
      return found;
    },
  };
}

function filesUnder(folder: string): string[] {
  let names: string[];
  try {
    names = readdirSync(folder);
  } catch {
    return [];
  }
  return names.flatMap((name) => {
    const full = path.join(folder, name);
    return statSync(full).isDirectory() ? filesUnder(full) : [full];
  });
}
