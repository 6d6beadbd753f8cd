import net from 'node:net';

export interface RawAnswer {
  /** Interim 1xx statuses before the answer (100 Continue). */
  interim: number[];
  status: number;
  /** Header names lower-cased; a repeated header's values joined with ", ". */
  headers: Record<string, string>;
  body: string;
  /** Whether the server closed the connection after the answer. */
  closed: boolean;
}

/**
 * Sends exact bytes to the server and reads one answer: what a client outside fetch (which refuses to send malformed
 * requests) can put on the wire. Resolves when the answer's Content-Length is read (and, when it says
 * `Connection: close`, the server closed the connection) or when the server closes.
 */
export function rawRequest(
  port: number,
  bytes: string | Buffer | (string | Buffer)[],
  timeoutMs = 5000,
): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => {
      for (const part of Array.isArray(bytes) ? bytes : [bytes]) socket.write(part);
    });
    let received = Buffer.alloc(0);
    let done = false;
    const interim: number[] = [];
    const finish = (closed: boolean) => {
      if (done) return;
      let text = received.toString('utf8');
      // Interim answers (100 Continue) have a head only.
      while (/^HTTP\/1\.[01] 1\d\d /.test(text) && text.includes('\r\n\r\n')) {
        interim.push(Number(text.slice(9, 12)));
        const head = text.indexOf('\r\n\r\n') + 4;
        received = received.subarray(Buffer.byteLength(text.slice(0, head)));
        text = text.slice(head);
      }
      const end = text.indexOf('\r\n\r\n');
      if (end < 0) {
        if (closed) {
          done = true;
          reject(new Error(`no answer before the connection closed: ${JSON.stringify(text)}`));
        }
        return;
      }
      const [statusLine, ...lines] = text.slice(0, end).split('\r\n');
      const headers: Record<string, string> = {};
      for (const line of lines) {
        const colon = line.indexOf(':');
        const name = line.slice(0, colon).trim().toLowerCase();
        const value = line.slice(colon + 1).trim();
        headers[name] = headers[name] === undefined ? value : `${headers[name]}, ${value}`;
      }
      const body = received.subarray(Buffer.byteLength(text.slice(0, end + 4)));
      const length = headers['content-length'] === undefined ? undefined : Number(headers['content-length']);
      if (!closed && (length === undefined || body.length < length || headers.connection === 'close')) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({
        interim,
        status: Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine ?? '')?.[1]),
        headers,
        body: body.toString('utf8'),
        closed,
      });
    };
    const timer = setTimeout(() => {
      socket.destroy();
      if (!done) reject(new Error(`no answer in ${timeoutMs} ms: ${JSON.stringify(received.toString('latin1'))}`));
    }, timeoutMs);
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      finish(false);
    });
    // The server may reset a connection it refused; what it wrote before counts.
    socket.on('error', () => finish(true));
    socket.on('close', () => finish(true));
  });
}
