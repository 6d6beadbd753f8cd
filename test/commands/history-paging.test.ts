import fc from 'fast-check';
import t from 'tap';
import { appFixture } from '../applications/support.js';
import { checkProperty } from '../support/properties.js';
import { recordSql } from '../support/sql-recorder.js';

// A record's history is paged in SQL (one page and one row more, from the event after the cursor),
// never read whole per page; the pages still give the whole stream once, in order, at every boundary.

const TEMPERATURES = ['hot', 'warm', 'cold'];

t.test('a long history is paged in SQL and its pages give the stream once at every boundary', async (t) => {
  // 120 writes from one key, faster than the plan's buckets refill on a quick machine: the rate limit is not tested here.
  const fast = { capacity: 10_000, refill_per_second: 1000 };
  const f = await appFixture(t, { limits: { rate: { key: fast, scopes: { 'leads:update': fast } } } });
  const id = await f.lead();
  for (let i = 0; i < 119; i++) {
    const response = await f.app.request(`/v1/leads/${id}`, {
      method: 'PATCH',
      key: f.ws.live,
      json: { temperature: TEMPERATURES[i % 3] },
    });
    if (response.status !== 200) throw new Error(`PATCH answered ${response.status}`);
  }
  const stream = (await f.app.services.store.readStream(`lead-${id}`)).map((e) => e.id);
  t.equal(stream.length, 120, '120 events');
  const page = async (limit: number, after?: string) =>
    (await (await f.admin(`/leads/${id}/history?limit=${limit}${after ? `&starting_after=${after}` : ''}`)).json()) as {
      data: { id: string; revision: number }[];
      has_more: boolean;
    };

  const sent = recordSql(t);
  const middle = await page(3, stream[59]);
  t.same(
    middle.data.map((e) => e.revision),
    [60, 61, 62],
  );
  const reads = sent.filter((s) => s.values.includes(`lead-${id}`) && /FROM events/.test(s.text));
  t.ok(reads.length > 0, 'the page read the stream');
  for (const read of reads)
    t.ok(
      /revision = 0/.test(read.text) || /id::text = /.test(read.text) || read.values.includes(4),
      `every read of the stream is bounded: ${read.text.replace(/\s+/g, ' ').slice(0, 80)}…`,
    );
  sent.length = 0;

  const last = await page(100, stream[19]);
  t.equal(last.data.length, 100, 'a page ending on the last event is full');
  t.equal(last.has_more, false, 'and says nothing follows');
  const after = await page(5, stream[118]);
  t.same(
    after.data.map((e) => e.id),
    [stream[119]],
  );
  t.equal(after.has_more, false);
  t.same((await page(5, stream[119])).data, [], 'after the last event: an empty page');

  await checkProperty(
    t,
    'pages of any sizes concatenate to the stream',
    fc.asyncProperty(
      fc.array(fc.oneof(fc.constantFrom(1, 39, 40, 41, 59, 60, 61, 100), fc.integer({ min: 1, max: 100 })), {
        minLength: 1,
        maxLength: 8,
      }),
      async (sizes) => {
        const seen: string[] = [];
        let cursor: string | undefined;
        for (let n = 0; ; n++) {
          const limit = sizes[n % sizes.length]!;
          const body = await page(limit, cursor);
          if (body.data.length > limit) throw new Error(`a page of ${limit} held ${body.data.length}`);
          seen.push(...body.data.map((e) => e.id));
          if (!body.has_more) break;
          if (body.data.length !== limit)
            throw new Error(`a page of ${limit} held ${body.data.length} and more follow`);
          cursor = body.data[body.data.length - 1]!.id;
        }
        return JSON.stringify(seen) === JSON.stringify(stream);
      },
    ),
    20,
  );
});
