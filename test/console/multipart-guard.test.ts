import { watch } from 'node:fs';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import t from 'tap';
import { memberOf } from '../identity/support.js';
import { consoleFixture, type ConsoleClient } from './support.js';

// A file the type sniffing reads as a PDF, five MiB long.
const PDF_HEAD = Buffer.from('%PDF-1.4\n');
const FIVE_MIB = Buffer.concat([PDF_HEAD, Buffer.alloc(5 * 1024 * 1024 - PDF_HEAD.length, 0x20)]);

/**
 * A refused multipart upload must not write a byte to the incoming area: the session, the origin, the CSRF token (in
 * the form's action) and the role are checked before the body is read. The incoming folder is watched (inotify)
 * while each request runs, so a file written and then deleted before the answer is still seen.
 */
t.test('a refused multipart upload writes nothing to incoming/', async (t) => {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'vcrm-multipart-guard-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const f = await consoleFixture(t, { config: { dataDir } });
  const created = await f.app.request('/v1/leads', {
    method: 'POST',
    key: f.ws.live,
    json: { full_name: 'Zoya Mirza', phone: '+919811199900', consent: true },
  });
  const leadId = ((await created.json()) as { id: string }).id;
  const page = `/console/w/${f.ws.workspace.slug}/documents?lead=${leadId}`;
  const incoming = path.join(dataDir, 'documents', 'incoming');

  // The storage makes it at its first upload; made here so it can be watched from the start.
  mkdirSync(incoming, { recursive: true, mode: 0o700 });
  const seen: string[] = [];
  const watcher = watch(incoming, (_event, name) => seen.push(String(name)));
  t.teardown(() => watcher.close());

  const owner = f.client();
  await owner.signIn(memberOf('owner'));
  const viewer = f.client();
  await viewer.signIn(memberOf('viewer'));

  async function send(o: { client?: ConsoleClient; token?: string; origin?: string }) {
    const body = new FormData();
    body.set('type', 'passport');
    body.set('file', new Blob([FIVE_MIB], { type: 'application/pdf' }), 'big.pdf');
    const headers: Record<string, string> = { origin: o.origin ?? f.app.baseUrl };
    if (o.client?.cookie) headers.cookie = o.client.cookie;
    const url = `${f.app.baseUrl}${page}${o.token === undefined ? '' : `&_csrf=${encodeURIComponent(o.token)}`}`;
    const response = await fetch(url, { method: 'POST', redirect: 'manual', headers, body });
    await response.arrayBuffer();
    await sleep(200);
    return response.status;
  }

  const ownerToken = await owner.csrf();
  const refusals: [string, () => Promise<number>, number][] = [
    ['no session', () => send({ token: ownerToken }), 303],
    ['another origin', () => send({ client: owner, token: ownerToken, origin: 'https://evil.example' }), 403],
    ['no token', () => send({ client: owner }), 403],
    ['a wrong token', () => send({ client: owner, token: 'not-the-token' }), 403],
    ['another session’s token', () => send({ client: viewer, token: ownerToken }), 403],
    ['a role that may not upload', async () => send({ client: viewer, token: await viewer.csrf() }), 403],
  ];
  for (const [what, request, status] of refusals) {
    seen.length = 0;
    t.equal(await request(), status, `${what}: refused`);
    t.same(seen, [], `${what}: nothing was written to incoming/`);
  }

  // The control: the watcher does see an accepted upload's file arrive.
  seen.length = 0;
  t.equal(await send({ client: owner, token: ownerToken }), 303, 'the owner’s upload is received');
  t.ok(seen.length > 0, 'and its file was written to incoming/');
});
