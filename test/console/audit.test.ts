import { gunzipSync } from 'node:zlib';
import t from 'tap';
import { memberOf } from '../identity/support.js';
import { consoleFixture } from './support.js';

t.test('audit: verify shows the head; a kept head checks; an event changed with SQL is named; export', async (t) => {
  const f = await consoleFixture(t);
  for (const [name, phone] of [
    ['Anil Kumar', '+919800000001'],
    ['Bina Shah', '+919800000002'],
  ])
    await f.app.request('/v1/leads', {
      method: 'POST',
      key: f.ws.live,
      json: { full_name: name, phone, consent: true },
    });
  const viewer = f.client();
  await viewer.signIn(memberOf('viewer'));
  const base = `/console/w/${f.ws.workspace.slug}/audit`;
  const page = await viewer.get(base);
  t.equal(page.status, 200);
  t.match(page.text, '<script src="/console/assets/copy.js"></script>');
  t.notMatch(page.text, 'Download the export', 'a viewer is not offered the export');
  const script = await viewer.get('/console/assets/copy.js');
  t.match(script.headers.get('content-type'), /javascript/);
  t.match(script.text, 'navigator.clipboard.writeText');

  const ok = await viewer.post(`${base}/verify`, {});
  t.equal(ok.status, 200);
  t.match(ok.text, /Every chain verifies<\/strong>: \d+ event\(s\) in \d+\s+stream\(s\)/);
  const head = /<p class="secret" id="head">([^<]+)<\/p>/.exec(ok.text)![1]!;
  t.match(head, /^[0-9a-f]{64}@\d+\/\d+$/);
  t.match(ok.text, /<button type="button" data-copy="head" hidden>Copy the head<\/button>/);

  const kept = await viewer.post(`${base}/verify`, { anchor: head });
  t.equal(kept.status, 200);
  t.match(kept.text, 'nothing up to the kept head changed');
  const notAHead = await viewer.post(`${base}/verify`, { anchor: 'abc' });
  t.equal(notAHead.status, 400);
  t.match(notAHead.text, /id="f-anchor-error">This is not a head/);
  const wrongHead = await viewer.post(`${base}/verify`, { anchor: `${'0'.repeat(64)}@${head.split('@')[1]}` });
  t.equal(wrongHead.status, 409);
  t.match(wrongHead.text, 'The head you kept does not match.', 'the kept head is named, not a chain');
  t.notMatch(wrongHead.text, 'A chain is broken', 'the chains are intact and not called broken');
  t.notMatch(wrongHead.text, 'revision -1', 'no empty link is named');
  t.match(
    wrongHead.text,
    /Every event’s own chain verifies \(\d+ event\(s\) in \d+ stream\(s\)\)/,
    'says the chains hold',
  );

  const victim = await f.app.pool.query<{ id: string; stream_id: string; revision: number }>(
    `SELECT id, stream_id, revision FROM events WHERE tenant_id = $1 AND type = 'lead.created' ORDER BY tx_id, position LIMIT 1`,
    [f.ws.workspace.id],
  );
  const row = victim.rows[0]!;
  await f.app.pool.query(`UPDATE events SET created_at = created_at + interval '1 second' WHERE id = $1`, [row.id]);
  const broken = await viewer.post(`${base}/verify`, {});
  t.equal(broken.status, 409);
  t.match(broken.text, 'A chain is broken.');
  t.match(broken.text, `event <code>${row.id}</code>, stream <code>${row.stream_id}</code>, revision ${row.revision}`);
  t.match(broken.text, 'it was changed');

  const counsellor = f.client();
  await counsellor.signIn(memberOf('counsellor'));
  t.equal((await counsellor.post(`${base}/verify`, {})).status, 403);
  t.equal((await viewer.post(`${base}/export`, {})).status, 403);

  const admin = f.client();
  await admin.signIn(memberOf('admin'));
  const response = await fetch(`${f.app.baseUrl}${base}/export`, {
    method: 'POST',
    headers: {
      cookie: admin.cookie!,
      origin: f.app.baseUrl,
      'content-type': 'application/x-www-form-urlencoded',
      // No Accept-Encoding: the body is the gzip file itself, not a transfer encoding the client would undo.
      'accept-encoding': 'identity',
    },
    body: new URLSearchParams({ _csrf: await admin.csrf() }),
  });
  t.equal(response.status, 200);
  t.equal(response.headers.get('content-type'), 'application/gzip');
  t.match(
    response.headers.get('content-disposition'),
    /^attachment; filename="ws-[a-z0-9]+-log-\d{4}-\d{2}-\d{2}T\d{6}Z\.ndjson\.gz"$/,
  );
  const lines = gunzipSync(Buffer.from(await response.arrayBuffer()))
    .toString('utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  t.ok(lines.length >= 4, 'header, events, trailer');
  t.match(JSON.stringify(lines[lines.length - 1]), /[0-9a-f]{64}@\d+\/\d+/, 'the trailer carries the head');
});
