import http from 'node:http';
import { randomUUID } from 'node:crypto';
import zlib from 'node:zlib';
import fc from 'fast-check';
import t from 'tap';
import { importExport } from '../../src/commands/export/import-log.js';
import { runCommand } from '../../src/commands/run-command.js';
import { projections } from '../../src/projections/index.js';
import { appFixture, type AppFixture } from '../applications/support.js';
import { makeBusy, readModelRows } from '../support/busy-workspace.js';
import { freshDatabase } from '../support/db.js';
import { each } from '../support/export.js';
import { checkProperty } from '../support/properties.js';

// GET /admin/v1/workspaces/{workspace}/export: the same NDJSON as `visa-crm export`, streamed, resumable with
// `after`, gzip by Accept-Encoding.

interface Trailer {
  trailer: true;
  events: number;
  next: string;
  head: string;
  anchor: string;
}

async function exportText(f: AppFixture, after?: string): Promise<string[]> {
  const response = await f.admin(`/export${after ? `?after=${encodeURIComponent(after)}` : ''}`);
  if (response.status !== 200) throw new Error(`export answered ${response.status}: ${await response.text()}`);
  return (await response.text()).trimEnd().split('\n');
}

const events = (lines: string[]) => lines.slice(1, -1);
const trailerOf = (lines: string[]) => JSON.parse(lines.at(-1)!) as Trailer;

/** GET over node:http so the raw (compressed) bytes are seen, not what fetch decodes. */
function rawGet(
  f: AppFixture,
  path: string,
  acceptEncoding: string,
): Promise<{ headers: http.IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const request = http.get(
      `${f.app.baseUrl}/admin/v1/workspaces/${f.ws.workspace.slug}${path}`,
      { headers: { authorization: `Bearer ${f.ws.staffToken}`, 'accept-encoding': acceptEncoding } },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (c: Buffer) => chunks.push(c));
        response.on('end', () => resolve({ headers: response.headers, body: Buffer.concat(chunks) }));
        response.on('error', reject);
      },
    );
    request.on('error', reject);
  });
}

t.test('the export of a busy workspace, imported elsewhere, gives the same read models; gzip on request', async (t) => {
  const f = await appFixture(t);
  await makeBusy(f, 6);
  const lines = await exportText(f);
  t.match(JSON.parse(lines[0]!), { format: 'visa-crm-export', version: 1, workspace: { id: f.ws.workspace.id } });
  const trailer = trailerOf(lines);
  t.equal(trailer.events, lines.length - 2);

  const target = await freshDatabase(t);
  const imported = await importExport(
    target.pool,
    projections,
    [{ name: 'http', lines: each(lines) }],
    f.app.services.personalData,
  );
  t.equal(imported.anchor, trailer.anchor, 'the import recomputes the trailer’s head');
  t.same(await readModelRows(target.pool, f.ws.workspace.id), await readModelRows(f.app.pool, f.ws.workspace.id));

  const zipped = await rawGet(f, '/export', 'gzip, deflate');
  t.equal(zipped.headers['content-encoding'], 'gzip');
  t.match(zipped.headers['content-type'], /^application\/x-ndjson/);
  t.same(events(zlib.gunzipSync(zipped.body).toString('utf8').trimEnd().split('\n')), events(lines));
  const plain = await rawGet(f, '/export', 'identity, gzip;q=0');
  t.equal(plain.headers['content-encoding'], undefined, 'gzip;q=0 is refused: plain');
  t.same(events(plain.body.toString('utf8').trimEnd().split('\n')), events(lines));
});

t.test('an export resumed after any event continues the full export exactly', async (t) => {
  const f = await appFixture(t);
  for (let i = 0; i < 6; i++) await f.lead();
  await f.convert(await f.lead());
  const full = await exportText(f);
  const all = events(full);
  await checkProperty(
    t,
    'resumed exports concatenate to the full one',
    fc.asyncProperty(fc.uniqueArray(fc.nat({ max: all.length - 1 }), { maxLength: 3 }), async (cuts) => {
      const parts: string[] = [];
      let after: string | undefined;
      for (const cut of [...cuts.sort((a, b) => a - b), all.length - 1]) {
        const lines = await exportText(f, after);
        // The first events up to the cut, as if the export had stopped there; then resume after the last one kept.
        const kept = events(lines).slice(0, cut + 1 - parts.length);
        parts.push(...kept);
        if (kept.length > 0) after = (JSON.parse(kept.at(-1)!) as { position: string }).position;
      }
      const rest = await exportText(f, after);
      parts.push(...events(rest));
      return JSON.stringify(parts) === JSON.stringify(all) && trailerOf(rest).anchor === trailerOf(full).anchor;
    }),
    12,
  );
});

t.test('exports resumed while writers append lose and repeat nothing', async (t) => {
  const f = await appFixture(t);
  const store = f.app.services.store;
  const tenantId = f.ws.workspace.id;
  let writing = true;
  const writer = async (w: number) => {
    let n = 0;
    while (writing) {
      const stream = `audit-test-${tenantId}-${w}-${n % 3}`;
      await runCommand(
        store,
        {
          tenantId,
          sandbox: false,
          metadata: { actor: { type: 'system', name: 'test' }, correlation_id: randomUUID() },
          now: new Date(),
        },
        [stream],
        (tx) => tx.append(stream, 'any', [{ type: 'test.noted', data: { w, n } }]),
      );
      n += 1;
    }
  };
  const writers = [0, 1, 2, 3].map(writer);
  const seen: string[] = [];
  let after: string | undefined;
  for (let round = 0; round < 8; round++) {
    const lines = await exportText(f, after);
    seen.push(...events(lines).map((l) => (JSON.parse(l) as { id: string }).id));
    after = trailerOf(lines).next;
  }
  writing = false;
  await Promise.all(writers);
  for (;;) {
    const lines = await exportText(f, after);
    seen.push(...events(lines).map((l) => (JSON.parse(l) as { id: string }).id));
    after = trailerOf(lines).next;
    if (trailerOf(lines).events === 0) break;
  }
  const stored = await f.app.pool.query<{ id: string }>('SELECT id FROM events WHERE tenant_id = $1', [tenantId]);
  t.ok(stored.rows.length > 20, `${stored.rows.length} events written meanwhile`);
  t.equal(new Set(seen).size, seen.length, 'no event exported twice');
  t.same(new Set(seen), new Set(stored.rows.map((r) => r.id)), 'every event exported');
});

t.test('refusals in the Error shape', async (t) => {
  const f = await appFixture(t);
  const bad = await f.admin('/export?after=yesterday');
  t.equal(bad.status, 400);
  t.match(await bad.json(), { error: 'validation_failed', fields: { after: String } });
  const huge = await f.admin(`/export?after=${'9'.repeat(20)}/1`);
  t.equal(huge.status, 400, 'a transaction id beyond 64 bits');
  t.match(await huge.json(), { error: 'validation_failed', fields: { after: String } });
  const anonymous = await f.app.request(`/admin/v1/workspaces/${f.ws.workspace.slug}/export`);
  t.equal(anonymous.status, 401);
  t.match(await anonymous.json(), { error: 'invalid_admin_token' });
  const unknown = await f.admin('/export', { workspace: 'no-such-workspace' });
  t.equal(unknown.status, 404);
  t.match(await unknown.json(), { error: 'not_found' });
});
