import fc from 'fast-check';
import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { scanPendingDocuments } from '../../src/commands/documents/scan-pending.js';
import { projections } from '../../src/projections/index.js';
import { rebuildReadModels } from '../../src/projections/rebuild.js';
import { clamdSkipReason, pdfFile, TEST_MALWARE_MARKER } from '../support/clamd.js';
import { documentFixture, documentOf } from './support.js';
import { faultInjector } from '../support/fault-injection.js';
import { checkProperty } from '../support/properties.js';
import { ClamdScanner } from '../../src/documents/clamd.js';

const skip = clamdSkipReason();

t.test('with the scanner down an upload waits, and is scanned when clamd is back', { skip }, async (t) => {
  // clamd restarts and a dozen scans: minutes on a loaded machine, beyond the 180 s default.
  t.setTimeout(420_000);
  const f = await documentFixture(t);
  const { pool, store, documents } = f.app.services;
  const leadId = await f.lead();
  await f.clamd.stop();
  const clean = await documentOf(
    t,
    await f.upload({ lead_id: leadId, type: 'passport', file: { bytes: pdfFile('clean'), name: 'a.pdf' } }),
    202,
  );
  const infected = await documentOf(
    t,
    await f.upload({ lead_id: leadId, type: 'passport', file: { bytes: pdfFile(TEST_MALWARE_MARKER), name: 'b.pdf' } }),
    202,
  );
  t.match([clean.status, infected.status], ['pending_scan', 'pending_scan']);
  t.same(f.files(), { incoming: [clean.id, infected.id].sort(), stored: [] }, 'waiting in incoming, not stored');
  t.equal((await f.admin(`/documents/${clean.id}/content`)).status, 409, 'not downloadable unscanned');
  t.equal((await f.admin(`/documents/${clean.id}/reject`, { method: 'POST', json: { reason: 'x' } })).status, 409);

  const whileDown = await scanPendingDocuments(pool, store, documents, f.app.services.now);
  t.match(whileDown, { pending: 2, recorded: 0, unavailable: true }, 'still down: nothing recorded');

  await f.clamd.start();
  // Two scanners at once (two processes' runners): one verdict per document.
  const passes = await Promise.all([
    scanPendingDocuments(pool, store, documents, f.app.services.now),
    scanPendingDocuments(pool, store, documents, f.app.services.now),
  ]);
  t.equal(passes[0].recorded + passes[1].recorded, 2, 'two verdicts in all');
  t.same(
    (await store.readStream(`document-${clean.id}`)).map((e) => e.type),
    ['document.received', 'document.uploaded'],
  );
  t.same(
    (await store.readStream(`document-${infected.id}`)).map((e) => e.type),
    ['document.received', 'document.infected'],
  );
  t.same(f.files(), { incoming: [], stored: [clean.id] }, 'the clean one stored, the infected one deleted');
  const download = await f.admin(`/documents/${clean.id}/content`);
  t.equal(download.status, 200);
  t.same(Buffer.from(await download.arrayBuffer()), pdfFile('clean'));
  t.match(await scanPendingDocuments(pool, store, documents, f.app.services.now), { pending: 0, recorded: 0 });

  const before = (await pool.query('SELECT id, status, body, revision FROM documents ORDER BY id')).rows;
  await rebuildReadModels(pool, projections, f.app.services.personalData);
  t.same(
    (await pool.query('SELECT id, status, body, revision FROM documents ORDER BY id')).rows,
    before,
    'rebuilt identically',
  );
});

t.test(
  'concurrent scan passes over the same pending documents record one verdict each and never hang',
  { skip },
  async (t) => {
    // Found by the first test of this file hanging now and then: a pass scanning a file another pass had just accepted
    // (moved to storage) failed to read it, and the scan awaited clamd's answer on a socket it had itself destroyed.
    t.setTimeout(300_000);
    const f = await documentFixture(t);
    const { pool, store, documents } = f.app.services;
    const leadId = await f.lead();
    const pass = () => scanPendingDocuments(pool, store, documents, f.app.services.now);
    await checkProperty(
      t,
      'concurrent scan passes',
      fc.asyncProperty(
        fc.array(fc.boolean(), { minLength: 1, maxLength: 5 }),
        fc.integer({ min: 2, max: 4 }),
        async (infectedFlags, passes) => {
          await f.clamd.stop();
          const ids: string[] = [];
          for (const [i, infected] of infectedFlags.entries()) {
            const bytes = pdfFile(infected ? TEST_MALWARE_MARKER : `clean-${i}`);
            const response = await f.upload({ lead_id: leadId, type: 'passport', file: { bytes, name: `${i}.pdf` } });
            if (response.status !== 202) return false;
            ids.push(((await response.json()) as { id: string }).id);
          }
          await f.clamd.start();
          const results = await withDeadline(Promise.all(Array.from({ length: passes }, pass)), 60_000);
          const verdicts = await Promise.all(ids.map(async (id) => (await store.readStream(`document-${id}`)).length));
          const stored = new Set(f.files().stored);
          return (
            results.reduce((sum, r) => sum + r.recorded, 0) === ids.length &&
            verdicts.every((events) => events === 2) &&
            ids.every((id, i) => stored.has(id) === !infectedFlags[i]) &&
            f.files().incoming.length === 0
          );
        },
      ),
      6,
    );
  },
);

t.test(
  "a file that is gone fails its scan at once with the file system's error, and clamd is not asked",
  { skip },
  async (t) => {
    const f = await documentFixture(t);
    const missing = path.join(f.dataDir, 'no-such-file');
    const scanner = new ClamdScanner({ path: f.clamd.socket }, 5_000);
    await t.rejects(withDeadline(scanner.scan(missing), 5_000), { code: 'ENOENT' });
    t.match(await scanner.scan(writeTemp(f.dataDir, pdfFile('clean'))), { kind: 'clean' }, 'the next scan works');
  },
);

/** Rejects when `promise` has not settled within `ms`: a hang fails the test with a message instead of a timeout. */
function withDeadline<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`not settled within ${ms} ms`)), ms);
  });
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}

function writeTemp(folder: string, bytes: Buffer): string {
  const file = path.join(folder, `scan-${Date.now()}.pdf`);
  writeFileSync(file, bytes);
  return file;
}

t.test('a statement failing anywhere in the upload keeps no file and records nothing', { skip }, async (t) => {
  // clamd restarts and a dozen scans: minutes on a loaded machine, beyond the 180 s default.
  t.setTimeout(420_000);
  const f = await documentFixture(t);
  const faults = faultInjector(t);
  const leadId = await f.lead();
  const upload = (name: string) =>
    f.upload({ lead_id: leadId, type: 'passport', file: { bytes: pdfFile(name), name: `${name}.pdf` } });
  const counted = faults.count();
  t.equal((await upload('counted')).status, 201);
  const statements = counted();
  t.ok(statements >= 3, `the upload's transaction has ${statements} statements`);
  await f.app.pool.query('TRUNCATE documents');
  rmSync(`${f.dataDir}/documents/stored`, { recursive: true, force: true });
  for (let position = 1; position <= statements; position++) {
    faults.arm(position);
    const response = await upload(`fault-${position}`);
    const fired = faults.fired();
    t.ok(fired, `statement ${position} failed (${fired?.replaced.slice(0, 40)})`);
    t.equal(response.status, 500, `statement ${position}: 500`);
    t.match(await response.json(), { error: 'internal_error' }, 'in the Error shape, without internals');
    t.same(f.files(), { incoming: [], stored: [] }, `statement ${position}: no file kept`);
  }
  t.equal((await f.app.pool.query('SELECT count(*)::int AS n FROM documents')).rows[0].n, 0, 'nothing recorded');
  t.equal((await upload('after')).status, 201, 'the next upload goes through');
});

t.test('a file past the largest size any type allows is cut off and refused', { skip }, async (t) => {
  // clamd restarts and a dozen scans: minutes on a loaded machine, beyond the 180 s default.
  t.setTimeout(420_000);
  const f = await documentFixture(t);
  const leadId = await f.lead();
  const huge = Buffer.concat([pdfFile(), Buffer.alloc(21 * 1024 * 1024, 0x20)]);
  const response = await f.upload({ lead_id: leadId, type: 'passport', file: { bytes: huge, name: 'huge.pdf' } });
  t.equal(response.status, 413);
  t.match(await response.json(), { error: 'document_too_large' });
  t.same(f.files(), { incoming: [], stored: [] }, 'nothing kept');
});
