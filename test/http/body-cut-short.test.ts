/*
 * A client that goes before sending the whole body: its request is refused as the client's (400, to no one), and never
 * read as the database being out of reach, which answered 503, logged an error and opened an outage that only a
 * new database connection ended (the fuzz suite's early-closing requests showed it on 2026-11-30).
 */
import net from 'node:net';
import t from 'tap';
import { databaseOutage } from '../../src/storage/outage.js';
import { seedWorkspace, startApp } from '../support/app.js';

t.test('a body cut short by the client is its refusal, not a database outage', async (t) => {
  const lines: string[] = [];
  const app = await startApp(t, {
    logger: { level: 'info', stream: { write: (line: string) => void lines.push(line) } } as never,
  });
  const ws = await seedWorkspace(app);
  const { port } = new URL(app.baseUrl);
  t.notOk(databaseOutage.ongoing, 'no outage before');

  const socket = net.connect(Number(port), '127.0.0.1');
  await new Promise((resolve) => socket.once('connect', resolve));
  socket.write(
    [
      'POST /v1/leads HTTP/1.1',
      'Host: 127.0.0.1',
      `Authorization: Bearer ${ws.live}`,
      'Content-Type: application/json',
      'Content-Length: 1000',
      '',
      '{"full_name": "Cut Sh',
    ].join('\r\n'),
  );
  // The server has the headers and part of the body; then the client goes.
  await new Promise((resolve) => setTimeout(resolve, 200));
  socket.destroy();

  // Node's parser reports the connection's end (at info); the body's reader failed in the same turn.
  const noticed = () => lines.some((l) => l.includes('request refused by the HTTP parser'));
  for (let waited = 0; !noticed() && waited < 10_000; waited += 50) await new Promise((r) => setTimeout(r, 50));
  t.ok(noticed(), 'the server saw the client go');
  await new Promise((resolve) => setTimeout(resolve, 200));
  t.notOk(
    lines.some((l) => l.includes('database cannot be reached')),
    'no database outage logged',
  );
  t.notOk(databaseOutage.ongoing, 'no outage opened');
  t.notOk(
    lines.some((l) => (JSON.parse(l) as { level: number }).level >= 50),
    'no error logged at all',
  );
});
