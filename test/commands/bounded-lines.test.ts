import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import zlib from 'node:zlib';
import fc from 'fast-check';
import t from 'tap';
import { boundedLines, LINE_LIMITS, type LineLimits } from '../../src/commands/export/bounded-lines.js';
import { ImportRefusedError } from '../../src/commands/export/line-checker.js';
import { checkProperty, goodText } from '../support/properties.js';

// The import's reader: the lines of plain or gzip bytes, however they are cut into chunks; a line
// past the cap and gzip data past the expansion cap are refused, naming the line being read.

async function read(bytes: Buffer, chunkSizes: number[] = [], limits?: LineLimits): Promise<string[]> {
  const chunks: Buffer[] = [];
  let at = 0;
  for (const size of chunkSizes) {
    if (at >= bytes.length) break;
    chunks.push(bytes.subarray(at, at + size));
    at += size;
  }
  if (at < bytes.length) chunks.push(bytes.subarray(at));
  const lines: string[] = [];
  for await (const line of boundedLines(Readable.from(chunks), 'x', limits)) lines.push(line);
  return lines;
}

async function refusal(work: Promise<unknown>): Promise<ImportRefusedError> {
  try {
    await work;
  } catch (error) {
    if (error instanceof ImportRefusedError) return error;
    throw error;
  }
  throw new Error('not refused');
}

const lineText = goodText(40).map((s) => s.replace(/[\r\n]/g, ''));

t.test('the lines of plain, gzip and multi-member gzip bytes, in any chunking', async (t) => {
  await checkProperty(
    t,
    'lines read back',
    fc.asyncProperty(
      fc.array(lineText, { maxLength: 12 }),
      fc.constantFrom('plain', 'gzip', 'two members'),
      fc.boolean(),
      fc.array(fc.integer({ min: 1, max: 7 }), { maxLength: 60 }),
      async (lines, kind, crlf, chunking) => {
        const text = lines.map((l) => `${l}${crlf ? '\r\n' : '\n'}`).join('');
        const half = Math.floor(lines.length / 2);
        const bytes =
          kind === 'plain'
            ? Buffer.from(text)
            : kind === 'gzip'
              ? zlib.gzipSync(text)
              : Buffer.concat([
                  zlib.gzipSync(
                    lines
                      .slice(0, half)
                      .map((l) => `${l}\n`)
                      .join(''),
                  ),
                  zlib.gzipSync(
                    lines
                      .slice(half)
                      .map((l) => `${l}\n`)
                      .join(''),
                  ),
                ]);
        return JSON.stringify(await read(bytes, chunking)) === JSON.stringify(lines);
      },
    ),
    200,
  );
});

t.test('a line past the cap is refused at its number, before it is held whole', async (t) => {
  const limits = { ...LINE_LIMITS, maxLineBytes: 100 };
  const ok = 'x'.repeat(100);
  t.same(await read(Buffer.from(`a\n${ok}\n`), [], limits), ['a', ok], 'a line of exactly the cap passes');
  for (const chunking of [[], [3, 50, 7, 1]]) {
    const refused = await refusal(read(Buffer.from(`a\nb\n${ok}x\nc\n`), chunking, limits));
    t.match(refused, { line: 3, reason: /longer than 100 bytes/ });
    const unended = await refusal(read(Buffer.from(`a\n${'y'.repeat(500)}`), chunking, limits));
    t.match(unended, { line: 2, reason: /longer than 100 bytes/ }, 'a last line without its line break too');
  }
});

t.test('gzip data expanding past the ratio is refused, naming the line being read', async (t) => {
  // 64 MiB of short lines in about 64 KiB: a thousandfold, as a decompression bomb expands.
  const bomb = zlib.gzipSync(Buffer.alloc(64 * 1024 * 1024, `${'a'.repeat(1023)}\n`));
  t.ok(bomb.length < 256 * 1024);
  const refused = await refusal(read(bomb));
  t.match(refused, { file: 'x', reason: /expands to more than 100 times/ });
  t.ok(refused.line > 1 && refused.line < 64 * 1024, `refused at line ${refused.line}, long before the end`);
  // An export's own gzip (hashes and ids) is well within the ratio.
  const lines = Array.from({ length: 2000 }, (_, i) =>
    JSON.stringify({ id: randomUUID(), revision: i, hash: Buffer.alloc(32, i).toString('hex') }),
  );
  t.same(await read(zlib.gzipSync(lines.join('\n'))), lines);
});
