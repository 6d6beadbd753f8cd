import { PassThrough } from 'node:stream';
import t from 'tap';
import { progressBar } from '../../src/cli/progress.js';

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
