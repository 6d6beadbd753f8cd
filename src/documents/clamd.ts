import { open } from 'node:fs/promises';
import net from 'node:net';

/*
 * A ClamAV daemon reached over its socket with the INSTREAM command (clamd(8)): the file is sent in length-prefixed
 * chunks and clamd answers `stream: OK`, `stream: <signature> FOUND` or `<reason> ERROR`. Nothing is written to a
 * path clamd must be able to read, so the daemon may run as another user, in another container, or on another host.
 */

/** What a scan found. */
export type ScanVerdict = { kind: 'clean' } | { kind: 'infected'; signature: string };

/** The scanner could not give a verdict (not running, refused, timed out, or answered ERROR): scan again later. */
export class ScannerUnavailableError extends Error {
  constructor(reason: string) {
    super(`The virus scanner is unavailable: ${reason}`);
    this.name = 'ScannerUnavailableError';
  }
}

/**
 * clamd was reached but gave no verdict on this file: it answered `<reason> ERROR` (a file past its StreamMaxLength,
 * say), or closed the connection while the file was being sent, which it does when it refuses the stream. Another
 * try may fail the same way, so the caller counts these per file (src/commands/documents/scan-pending.ts).
 */
export class ScanFailedError extends ScannerUnavailableError {
  readonly reason: string;
  constructor(reason: string) {
    super(reason);
    this.reason = reason;
    this.message = `clamd gave no verdict on this file: ${reason}`;
    this.name = 'ScanFailedError';
  }
}

/** Scans a file; throws ScannerUnavailableError when no verdict could be had (ScanFailedError: none for this file). */
export interface VirusScanner {
  scan(path: string): Promise<ScanVerdict>;
}

/** Where clamd listens: `unix:/run/clamav/clamd.ctl` (Debian's default) or `tcp://127.0.0.1:3310`. */
export type ClamdAddress = { path: string } | { host: string; port: number };

export function parseClamdAddress(text: string): ClamdAddress {
  if (text.startsWith('unix:')) {
    const path = text.slice('unix:'.length).replace(/^\/\/(?=\/)/, '');
    if (!path.startsWith('/')) throw new Error(`CLAMD_ADDRESS ${text}: a unix socket needs an absolute path`);
    return { path };
  }
  const url = new URL(text);
  if (url.protocol !== 'tcp:' || !url.hostname || !url.port)
    throw new Error(`CLAMD_ADDRESS ${text}: expected unix:/path/to/socket or tcp://host:port`);
  return { host: url.hostname.replace(/^\[|\]$/g, ''), port: Number(url.port) };
}

/** clamd reads chunks of up to StreamMaxLength in total; 64 KiB chunks keep memory flat whatever the file's size. */
const CHUNK = 64 * 1024;

/** Parses clamd's answer to one INSTREAM. */
export function parseAnswer(answer: string): ScanVerdict {
  const text = answer.replace(/\0+$/, '').trim();
  if (/^stream: OK$/.test(text)) return { kind: 'clean' };
  const found = /^stream: (.+) FOUND$/.exec(text);
  if (found) return { kind: 'infected', signature: found[1]! };
  if (/ ERROR$/.test(text)) throw new ScanFailedError(`clamd answered ${JSON.stringify(text.slice(0, 200))}`);
  throw new ScannerUnavailableError(`clamd answered ${JSON.stringify(text.slice(0, 200))}`);
}

export class ClamdScanner implements VirusScanner {
  private readonly address: ClamdAddress;
  private readonly timeoutMs;
  constructor(address: ClamdAddress, timeoutMs = 60_000) {
    this.address = address;
    this.timeoutMs = timeoutMs;
  }

  /**
   * Throws ScannerUnavailableError when clamd gives no verdict, and the file system's own error (ENOENT, ...) when the
   * file cannot be opened: that is not the scanner's fault, and the file is opened before clamd is reached.
   */
  async scan(path: string): Promise<ScanVerdict> {
    // Opened first: a file moved or deleted after this (another process's scan pass accepting it) is still read whole.
    const file = await open(path, 'r');
    try {
      return await this.scanOpened(file.createReadStream({ highWaterMark: CHUNK, autoClose: false }));
    } finally {
      await file.close();
    }
  }

  private async scanOpened(content: AsyncIterable<Buffer>): Promise<ScanVerdict> {
    const socket = net.connect(this.address);
    socket.setTimeout(this.timeoutMs);
    const chunks: Buffer[] = [];
    let timedOut = false;
    const answer = new Promise<string>((resolve, reject) => {
      socket.on('data', (chunk: Buffer) => chunks.push(chunk));
      socket.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
      socket.on('timeout', () => {
        timedOut = true;
        socket.destroy(new Error(`no answer within ${this.timeoutMs} ms`));
      });
      socket.on('error', (error) => reject(new ScannerUnavailableError(error.message)));
      // Closed before clamd ended its answer (destroyed on our side after a failed send, or reset by clamd): settles
      // the answer too. Without it, a send that failed left this promise pending and the scan awaiting it for ever.
      socket.on('close', () => reject(new ScannerUnavailableError('the connection closed before an answer')));
    });
    // A failed send shows as the socket's error; the answer's rejection carries it.
    answer.catch(() => undefined);
    try {
      await new Promise<void>((resolve, reject) => {
        socket.once('connect', resolve);
        socket.once('error', reject);
      });
    } catch (error) {
      socket.destroy();
      throw new ScannerUnavailableError(error instanceof Error ? error.message : String(error));
    }
    try {
      await write(socket, Buffer.from('zINSTREAM\0'));
      for await (const chunk of content) {
        const length = Buffer.alloc(4);
        length.writeUInt32BE(chunk.length);
        await write(socket, Buffer.concat([length, chunk]));
      }
      await write(socket, Buffer.alloc(4));
    } catch (error) {
      socket.destroy();
      await answer.catch(() => undefined);
      throw this.noVerdict(error, chunks, timedOut);
    }
    let text: string;
    try {
      text = await answer;
    } catch (error) {
      throw this.noVerdict(error, chunks, timedOut);
    } finally {
      socket.destroy();
    }
    return parseAnswer(text);
  }

  /**
   * Why a scan clamd had accepted ended without a verdict. Silence is clamd's state (unavailable). A connection it
   * closed or reset is about this file (ScanFailedError): it refuses a stream past StreamMaxLength by answering ERROR
   * and closing at once, and that answer is lost when our send fails first.
   */
  private noVerdict(error: unknown, received: Buffer[], timedOut: boolean): ScannerUnavailableError {
    if (timedOut) return new ScannerUnavailableError(`no answer within ${this.timeoutMs} ms`);
    const said = Buffer.concat(received).toString('utf8');
    if (said.replace(/\0+$/, '').trim()) {
      try {
        parseAnswer(said);
      } catch (answered) {
        if (answered instanceof ScannerUnavailableError) return answered;
      }
      return new ScannerUnavailableError('clamd answered before the file was sent whole');
    }
    const message = error instanceof Error ? error.message : String(error);
    return new ScanFailedError(`clamd closed the connection without a verdict (${message})`);
  }

  /** True when clamd answers PING with PONG within `timeoutMs` of silence. */
  async ping(timeoutMs = 2_000): Promise<boolean> {
    return new Promise((resolve) => {
      const socket = net.connect(this.address);
      socket.setTimeout(timeoutMs, () => socket.destroy());
      let text = '';
      socket.on('connect', () => socket.write('zPING\0'));
      socket.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
      socket.on('close', () => resolve(text.replace(/\0/g, '').trim() === 'PONG'));
      socket.on('error', () => undefined);
    });
  }
}

function write(socket: net.Socket, data: Buffer): Promise<void> {
  return new Promise((resolve, reject) => {
    socket.write(data, (error) => (error ? reject(error) : resolve()));
  });
}
