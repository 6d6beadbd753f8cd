import net from 'node:net';
import t from 'tap';
import { seedWorkspace, startApp, TEST_ENCRYPTION_KEY } from '../support/app.js';
import { freshDatabase } from '../support/db.js';
import { startServiceProcess } from '../support/service-process.js';
import { leadBody } from '../leads/helpers.js';

// A body over the limit is answered 413 before it has all arrived. Closing the connection right after the answer
// made Node's fetch, still sending, fail with EPIPE or ECONNRESET instead of reading it (7 times in 20): the server
// reads and discards what follows, up to a bound of bytes and time, before it closes (a lingering close).

const TRIES = 20;
const TWO_MEGABYTES = 2 * 1024 * 1024;

t.test('fetch sending a 2 MB lead reads its 413 every time', async (t) => {
  const database = await freshDatabase(t);
  const ws = await seedWorkspace(await startApp(t, { database }));
  // The service in a process of its own, as clients meet it: it answers while the client, elsewhere, still sends.
  const service = await startServiceProcess({
    ...process.env,
    DATABASE_URL: database.url,
    SECRET_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY,
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'info',
    RUN_WORKERS: 'false',
  });
  t.teardown(() => {
    service.child.kill('SIGKILL');
  });
  const body = JSON.stringify(leadBody({ message: 'x'.repeat(TWO_MEGABYTES) }));
  const outcomes: string[] = [];
  for (let i = 0; i < TRIES; i++) {
    try {
      const response = await fetch(`${service.baseUrl}/v1/leads`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ws.live}`, 'content-type': 'application/json' },
        body,
      });
      const answer = (await response.json()) as { error?: string };
      outcomes.push(`${response.status} ${answer.error}`);
    } catch (error) {
      const cause = error instanceof Error && error.cause instanceof Error ? error.cause.message : String(error);
      outcomes.push(`failed: ${cause}`);
    }
  }
  t.same(outcomes, Array(TRIES).fill('413 payload_too_large'), 'every try read the 413 in the Error shape');
});

t.test(
  'a body over the limit sent slowly is read to its end, then answered 413 and closed without a reset',
  async (t) => {
    const api = await startApp(t);
    const ws = await seedWorkspace(api);
    const chunk = Buffer.alloc(64 * 1024, 0x61);
    const chunks = 32;
    const outcome = await new Promise<{ writeError?: string; answer: string }>((resolve) => {
      const socket = net.connect(Number(new URL(api.baseUrl).port), '127.0.0.1');
      let answer = '';
      let writeError: string | undefined;
      socket.on('data', (d: Buffer) => (answer += d.toString()));
      socket.on('error', (error: NodeJS.ErrnoException) => (writeError = error.code));
      socket.on('close', () => resolve({ writeError, answer }));
      socket.write(
        `POST /v1/leads HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n` +
          `authorization: Bearer ${ws.live}\r\ncontent-length: ${chunk.length * chunks}\r\n\r\n`,
      );
      // Closed at once, the server's socket would meet the chunks still coming with a reset (EPIPE, ECONNRESET here).
      let sent = 0;
      const timer = setInterval(() => {
        if (socket.destroyed) return clearInterval(timer);
        socket.write(chunk);
        if (++sent === chunks) clearInterval(timer);
      }, 10);
    });
    t.equal(outcome.writeError, undefined, 'every byte of the body was sent without a reset');
    t.match(outcome.answer, /^HTTP\/1\.1 413 /, 'the answer is a 413');
    t.match(outcome.answer, /"error":"payload_too_large"/, 'in the Error shape');
  },
);

t.test('a client that sends on without end is cut off once the bound is reached', async (t) => {
  const api = await startApp(t);
  const ws = await seedWorkspace(api);
  // A body far over the lingering bound, sent slowly enough to be measured: the server stops reading at the bound.
  const chunk = Buffer.alloc(64 * 1024, 0x61);
  let sent = 0;
  const stream = new ReadableStream<Uint8Array>({
    async pull(controller) {
      sent += chunk.length;
      controller.enqueue(chunk);
      if (sent > 512 * 1024 * 1024) controller.close();
    },
  });
  const started = Date.now();
  const response = await fetch(`${api.baseUrl}/v1/leads`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ws.live}`, 'content-type': 'application/json' },
    body: stream,
    duplex: 'half',
  } as RequestInit).catch((error: unknown) => error);
  if (response instanceof Response) t.equal(response.status, 413, 'the answer, when it is read, is the 413');
  // Reading the answer or failing the send, the client is released before it has sent everything.
  await new Promise((r) => setTimeout(r, 100));
  t.ok(sent < 512 * 1024 * 1024, `the server stopped reading after ${Math.round(sent / 1024 / 1024)} MB`);
  t.ok(Date.now() - started < 30_000, 'and within the time bound');
});
