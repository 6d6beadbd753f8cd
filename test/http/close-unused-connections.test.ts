import { once } from 'node:events';
import net from 'node:net';
import t from 'tap';
import { startApp } from '../support/app.js';

// A browser opens a connection ahead of its next request (Chromium did, on the console, in the README journey):
// closing the service ends such a connection at once instead of waiting for its headers timeout; a connection whose
// request had begun to arrive is not cut, it gets its answer (the shutdown refusal, since the request ends after the
// close began).

/** A raw TCP connection to the app, with everything it receives. */
async function connect(baseUrl: string): Promise<{ socket: net.Socket; received: () => string }> {
  const socket = net.connect(Number(new URL(baseUrl).port), '127.0.0.1');
  await once(socket, 'connect');
  let text = '';
  socket.on('data', (chunk: Buffer) => (text += chunk.toString()));
  return { socket, received: () => text };
}

/** Whether `promise` settles within `ms`. */
function within(promise: Promise<unknown>, ms: number): Promise<boolean> {
  return Promise.race([
    promise.then(() => true),
    new Promise<boolean>((resolve) => setTimeout(() => resolve(false), ms).unref()),
  ]);
}

t.test('close ends a connection that sent nothing, and answers one with a request under way', async (t) => {
  const { app, baseUrl } = await startApp(t);
  const unused = await connect(baseUrl);
  const underWay = await connect(baseUrl);
  const unusedEnded = once(unused.socket, 'close');
  const underWayEnded = once(underWay.socket, 'close');
  underWay.socket.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n');
  // The server has read the first bytes before the close begins.
  await new Promise((resolve) => setTimeout(resolve, 100));

  const closing = app.close();
  underWay.socket.write('\r\n');
  t.ok(await within(unusedEnded, 10_000), 'the unused connection is ended');
  unused.socket.destroy(); // without the fix, what held the close: the test then fails in bounded time
  t.ok(await within(closing, 10_000), 'and the close completes');
  t.ok(await within(underWayEnded, 10_000), 'the connection with a request ends after its answer');
  t.match(underWay.received(), /^HTTP\/1\.1 503 /, 'the request under way was answered');
  t.match(underWay.received(), /"error":"shutting_down"/);
  t.match(underWay.received(), /\r\nconnection: close\r\n/i, 'with the connection closed after it');
});
