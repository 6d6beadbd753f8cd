import { pipeline, Readable, Transform } from 'node:stream';
import zlib from 'node:zlib';
import { ImportRefusedError } from './line-checker.js';

/*
 * The lines of an export's bytes, with the work any input can cause bounded (docs/decisions.md, "Bounded import
 * input"): a line longer than the cap is refused before it is held whole, and gzip data that expands past a ratio of
 * the compressed bytes read so far is refused as it expands. Either refusal names the line being read.
 */

export interface LineLimits {
  /** Bytes of one line, its line break left out. */
  maxLineBytes: number;
  /** Decompressed bytes per compressed byte read, at most (past `expansionSlackBytes`). */
  maxGzipRatio: number;
  expansionSlackBytes: number;
}

export const LINE_LIMITS: LineLimits = {
  // An event line holds one request's worth of data (BODY_LIMIT_BYTES, 64 KiB unless raised) plus its envelope.
  maxLineBytes: 16 * 1024 * 1024,
  // An export's lines are full of hashes and ids: gzip shrinks them about tenfold; a decompression bomb, a thousandfold.
  maxGzipRatio: 100,
  expansionSlackBytes: 1024 * 1024,
};

const GZIP_MAGIC = [0x1f, 0x8b];

/** The first chunks of a byte stream, joined until they hold `size` bytes (or the stream ended), and the rest. */
async function peek(input: Readable, size: number): Promise<{ head: Buffer; rest: Readable }> {
  const chunks = input[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  let head = Buffer.alloc(0);
  let ended = false;
  while (head.length < size) {
    const next = await chunks.next();
    if (next.done) {
      ended = true;
      break;
    }
    head = Buffer.concat([head, next.value]);
  }
  async function* all(): AsyncGenerator<Buffer> {
    if (head.length > 0) yield head;
    if (ended) return;
    for (let next = await chunks.next(); !next.done; next = await chunks.next()) yield next.value;
  }
  return { head, rest: Readable.from(all()) };
}

/** The bytes decompressed when they start with the gzip magic bytes, with a count of the compressed bytes read. */
function decompressed(rest: Readable, gzip: boolean): { bytes: Readable; compressed: () => number } {
  if (!gzip) return { bytes: rest, compressed: () => 0 };
  let compressed = 0;
  const counter = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      compressed += chunk.length;
      done(null, chunk);
    },
  });
  const bytes = pipeline(rest, counter, zlib.createGunzip(), () => undefined);
  return { bytes, compressed: () => compressed };
}

/** The lines of an export (gzip or not), refusing a line past the cap and gzip data past the expansion cap. */
export async function* boundedLines(
  raw: Readable,
  file: string,
  limits: LineLimits = LINE_LIMITS,
): AsyncGenerator<string> {
  const { head, rest } = await peek(raw, GZIP_MAGIC.length);
  const gzip = GZIP_MAGIC.every((byte, i) => head[i] === byte);
  const { bytes, compressed } = decompressed(rest, gzip);
  let line = 1;
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  let expanded = 0;
  const tooLong = () =>
    new ImportRefusedError(file, line, `the line is longer than ${limits.maxLineBytes} bytes, the most a line may be`);
  const text = (parts: Buffer[]) => {
    const whole = Buffer.concat(parts).toString('utf8');
    return whole.endsWith('\r') ? whole.slice(0, -1) : whole;
  };
  for await (const chunk of bytes as AsyncIterable<Buffer>) {
    expanded += chunk.length;
    if (gzip && expanded > limits.maxGzipRatio * compressed() + limits.expansionSlackBytes)
      throw new ImportRefusedError(
        file,
        line,
        `the gzip data expands to more than ${limits.maxGzipRatio} times its size (a decompression bomb?)`,
      );
    let start = 0;
    for (let end = chunk.indexOf(0x0a, start); end !== -1; end = chunk.indexOf(0x0a, start)) {
      const part = chunk.subarray(start, end);
      if (pendingBytes + part.length > limits.maxLineBytes) throw tooLong();
      yield text([...pending, part]);
      pending = [];
      pendingBytes = 0;
      line += 1;
      start = end + 1;
    }
    if (start < chunk.length) {
      pendingBytes += chunk.length - start;
      if (pendingBytes > limits.maxLineBytes) throw tooLong();
      pending.push(chunk.subarray(start));
    }
  }
  if (pendingBytes > 0) yield text(pending);
}
