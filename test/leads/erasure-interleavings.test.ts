import fc from 'fast-check';
import t from 'tap';
import { liveKeys } from '../../src/commands/leads/erase-copies.js';
import type { InterleavingPoint } from '../../src/commands/person-locks.js';
import { fanOutBatch } from '../../src/subscribers/webhook-fanout.js';
import { checkProperty } from '../support/properties.js';
import { Gates, raceFixture, type Person, type RaceFixture } from './erasure-race-support.js';

// Erasure against writes, sampled: erasures, document uploads, task creations, invoice issues and fan-out batches of one
// person started together, each possibly held at one of its interleaving points, the holds released in a random
// order. Whatever the interleaving, every write is either taken before the erasure (and erased with the person) or
// refused with lead_erased, and afterwards nothing of the person can be read anywhere.

type Kind = 'erase' | 'task' | 'invoice' | 'document' | 'fanout';
const POINTS: Record<Kind, InterleavingPoint[]> = {
  erase: ['erasure-locked', 'erasure-keys', 'erasure-commit'],
  task: ['person-locked'],
  invoice: ['person-locked'],
  document: ['person-locked'],
  fanout: ['fanout-read', 'fanout-insert'],
};
interface Op {
  kind: Kind;
  hold: InterleavingPoint | null;
}

const op = fc
  .constantFrom<Kind>('erase', 'task', 'invoice', 'document', 'fanout')
  .chain((kind) => fc.record({ kind: fc.constant(kind), hold: fc.option(fc.constantFrom(...POINTS[kind])) }));
const schedule = fc
  .array(op, { minLength: 1, maxLength: 6 })
  .map((ops): Op[] => (ops.some((o) => o.kind === 'erase') ? ops : [...ops, { kind: 'erase', hold: null }]))
  .chain((ops) => fc.tuple(fc.constant(ops), fc.shuffledSubarray([...ops.keys()], { minLength: ops.length })));

/** What each operation answered: an HTTP status and error code, or the fan-out's success. */
async function run(f: RaceFixture, p: Person, kind: Kind): Promise<string> {
  const answer = async (response: Response) => {
    const body = (await response.json().catch(() => ({}))) as { error?: string };
    return `${response.status}${body.error ? ` ${body.error}` : ''}`;
  };
  switch (kind) {
    case 'erase':
      return answer(await f.erase(p));
    case 'task':
      return answer(await f.createTask(p, `Call ${p.name}`));
    case 'invoice':
      return answer(await f.issueInvoice(p, `Visa filing for ${p.name}, ${p.phone}`));
    case 'document':
      return answer(await f.uploadDocument(p, `${p.name} ${p.email}`));
    case 'fanout':
      await fanOutBatch(f.h.pool, f.h.services.personalData, f.h.services.now());
      return 'fanned out';
  }
}

const ALLOWED: Record<Kind, string[]> = {
  erase: ['200'],
  task: ['201', '409 lead_erased'],
  invoice: ['201', '409 lead_erased'],
  document: ['202', '409 lead_erased'],
  fanout: ['fanned out'],
};

t.test('property: no interleaving of erasure and writes leaves anything of the person', async (t) => {
  const f = await raceFixture(t);
  const gates = new Gates(t);
  await checkProperty(
    t,
    'erasure interleavings',
    fc.asyncProperty(schedule, async ([ops, order]) => {
      const p = await f.person();
      const holds = ops.map((o) => (o.hold ? gates.hold(o.hold, o.hold === 'fanout-read' ? undefined : p.id) : null));
      const running = ops.map((o) => run(f, p, o.kind));
      const settled = Promise.allSettled(running);
      for (const i of order) {
        const hold = holds[i];
        if (!hold) continue;
        // A hold nobody reaches (its operation refused first, or waiting on a lock) is released after a while.
        await Promise.race([hold.reached, settled, new Promise((resolve) => setTimeout(resolve, 25))]);
        hold.release();
      }
      const answers = await settled;
      gates.clear();
      answers.forEach((a, i) => {
        const said = a.status === 'fulfilled' ? a.value : String(a.reason);
        if (!ALLOWED[ops[i]!.kind].includes(said)) throw new Error(`${ops[i]!.kind} answered ${said}`);
      });
      await f.fanOut();
      const traces = await f.traces(p);
      if (traces.length > 0) throw new Error(`left: ${traces.join(', ')}`);
      const live = await liveKeys(f.h.pool, f.h.ws.workspace.id, p.id);
      if (live > 0) throw new Error(`${live} data keys of the person are live`);
    }),
    15,
  );
});
