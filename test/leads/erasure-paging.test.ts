import fc from 'fast-check';
import t from 'tap';
import { liveKeys } from '../../src/commands/leads/erase-copies.js';
import { ERASURE_PAGE } from '../../src/commands/leads/erase-lead.js';
import { checkProperty } from '../support/properties.js';
import { recordSql } from '../support/sql-recorder.js';
import { raceFixture } from './erasure-race-support.js';

// An erasure pages through the person's streams and their events (bounded batches, never the whole
// person in memory); whatever the page sizes, every stream is erased once and nothing of the person is left.

t.test('property: an erasure with any page sizes erases every stream of the person once', async (t) => {
  const f = await raceFixture(t);
  const saved = { ...ERASURE_PAGE };
  t.teardown(() => Object.assign(ERASURE_PAGE, saved));
  const sent = recordSql(t);
  await checkProperty(
    t,
    'erasure pages',
    fc.asyncProperty(
      fc.integer({ min: 1, max: 4 }),
      fc.integer({ min: 1, max: 6 }),
      fc.integer({ min: 0, max: 4 }),
      fc.integer({ min: 0, max: 3 }),
      async (streamPage, eventPage, tasks, invoices) => {
        Object.assign(ERASURE_PAGE, { streams: streamPage, events: eventPage });
        const p = await f.person();
        const taskIds: string[] = [];
        for (let i = 0; i < tasks; i++) {
          const created = await f.createTask(p, `Call ${p.name} #${i}`);
          taskIds.push(((await created.json()) as { id: string }).id);
          await f.h.admin('PATCH', `/tasks/${taskIds[i]}`, { title: `Email ${p.email} #${i}` });
        }
        for (let i = 0; i < invoices; i++) await f.issueInvoice(p, `Filing for ${p.name} #${i}`);
        sent.length = 0;
        const erased = await f.erase(p);
        const answer = (await erased.json()) as { streams: number };
        if (answer.streams !== 1 + tasks + invoices) throw new Error(`erased ${answer.streams} streams`);
        const pages = sent.filter((s) => /ORDER BY s LIMIT \$5/.test(s.text));
        if (pages.length < Math.ceil(answer.streams / streamPage)) throw new Error(`${pages.length} pages of streams`);
        if (pages.some((s) => s.values[4] !== streamPage)) throw new Error('a page of streams is not bounded');
        const reads = sent.filter((s) => /ORDER BY events.stream_id, events.revision LIMIT \$4/.test(s.text));
        if (reads.length === 0) throw new Error('no page of events read');
        if (reads.some((s) => s.values[3] !== eventPage)) throw new Error('a page of events is not bounded');
        for (const id of taskIds) {
          const task = (await (await f.h.admin('GET', `/tasks/${id}`)).json()) as { title: string };
          if (task.title !== '') throw new Error(`task ${id} reads "${task.title}"`);
        }
        await f.fanOut();
        const traces = await f.traces(p);
        if (traces.length > 0) throw new Error(`left: ${traces.join(', ')}`);
        if ((await liveKeys(f.h.pool, f.h.ws.workspace.id, p.id)) > 0) throw new Error('a data key is live');
      },
    ),
    10,
  );
});
