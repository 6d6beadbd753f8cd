import { PassThrough } from 'node:stream';
import t from 'tap';
import { progressBar, progressLines } from '../../src/cli/progress.js';

// The export's progress bar: drawn on a terminal only, so pipes and scripts never see it.

function fakeStderr(isTTY: boolean): { stream: NodeJS.WriteStream; written: () => string } {
  const stream = Object.assign(new PassThrough(), { isTTY }) as unknown as NodeJS.WriteStream;
  let text = '';
  (stream as unknown as PassThrough).on('data', (chunk: Buffer) => (text += chunk.toString()));
  return { stream, written: () => text };
}

t.test('on a terminal the bar is drawn and ends with a full count and a line break', async (t) => {
  const { stream, written } = fakeStderr(true);
  const bar = progressBar('exporting acme', 40, stream);
  bar.add(10);
  bar.add(30);
  bar.done();
  await new Promise((r) => setImmediate(r));
  t.match(written(), /^\rexporting acme \[\.{30}\] 0% 0\/40/, 'drawn at once');
  t.match(written(), /\rexporting acme \[#{30}\] 100% 40\/40\n$/, 'the last drawing is complete');
});

t.test('nothing is written when stderr is not a terminal', async (t) => {
  const { stream, written } = fakeStderr(false);
  const bar = progressBar('exporting acme', 40, stream);
  bar.add(40);
  bar.done();
  await new Promise((r) => setImmediate(r));
  t.equal(written(), '');
});

t.test('an empty export shows as complete', async (t) => {
  const { stream, written } = fakeStderr(true);
  progressBar('exporting acme', 0, stream).done();
  await new Promise((r) => setImmediate(r));
  t.match(written(), /100% 0\/0\n$/);
});

// Progress lines (a rebuild's, an import's): whole lines on any stream, at most one every few seconds.

function fakeStream(): { stream: NodeJS.WritableStream; written: () => string } {
  const stream = new PassThrough();
  let text = '';
  stream.on('data', (chunk: Buffer) => (text += chunk.toString()));
  return { stream, written: () => text };
}

t.test('progress lines: the first report, then one a period at most, and the one that reaches the total', async (t) => {
  const { stream, written } = fakeStream();
  let now = 0;
  const lines = progressLines('read-models rebuild', stream, 5000, () => now);
  lines.report(0, 3000);
  for (const [at, done] of [
    [1000, 1000],
    [4000, 2000],
    [6000, 2500],
    [7000, 3000],
  ] as const) {
    now = at;
    lines.report(done, 3000);
  }
  await new Promise((r) => setImmediate(r));
  t.same(written().split('\n'), [
    'read-models rebuild: 0 of 3000 (0%) events',
    'read-models rebuild: 2500 of 3000 (83%) events',
    'read-models rebuild: 3000 of 3000 (100%) events',
    '',
  ]);
});

t.test('progress lines without a total count events alone; an empty log is complete', async (t) => {
  const { stream, written } = fakeStream();
  progressLines('import', stream).report(500);
  progressLines('read-models rebuild', stream).report(0, 0);
  await new Promise((r) => setImmediate(r));
  t.equal(written(), 'import: 500 events\nread-models rebuild: 0 of 0 (100%) events\n');
});
