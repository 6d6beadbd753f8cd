import t from 'tap';
import { scanPendingDocuments } from '../../src/commands/documents/scan-pending.js';
import { SCAN_ATTEMPTS, type Document } from '../../src/domain/documents/index.js';
import { DocumentScanRunner } from '../../src/subscribers/document-scan-runner.js';
import { clamdSkipReason, pdfFile, TEST_MALWARE_MARKER } from '../support/clamd.js';
import { documentFixture, documentOf, type DocumentFixture } from './support.js';

const skip = clamdSkipReason();
/** clamd's StreamMaxLength here: a PDF past it makes clamd refuse the stream, every time. */
const STREAM_LIMIT = '64K';
const OVERSIZED = pdfFile('x'.repeat(200 * 1024));

/** Uploads made while clamd is down, in this order: each waits for the scan runner (202 pending_scan). */
async function uploadsWhileDown(t: Parameters<typeof documentFixture>[0], f: DocumentFixture) {
  const leadId = await f.lead();
  await f.clamd.stop();
  const upload = async (bytes: Buffer, name: string) =>
    documentOf(t, await f.upload({ lead_id: leadId, type: 'passport', file: { bytes, name } }), 202);
  const oversized = await upload(OVERSIZED, 'big.pdf');
  const clean = await upload(pdfFile('clean'), 'clean.pdf');
  const infected = await upload(pdfFile(TEST_MALWARE_MARKER), 'infected.pdf');
  await f.clamd.start();
  return { oversized, clean, infected };
}

async function statusOf(f: DocumentFixture, id: string): Promise<Document> {
  const response = await f.admin(`/documents/${id}`);
  return (await response.json()) as Document;
}

t.test(
  'a file clamd answers with an error holds back no later scan, and is set aside after a few',
  { skip },
  async (t) => {
    t.setTimeout(300_000);
    const f = await documentFixture(t, {}, { clamd: { streamMaxLength: STREAM_LIMIT } });
    const { pool, store, documents, now } = f.app.services;
    const { oversized, clean, infected } = await uploadsWhileDown(t, f);

    const failures = new Map<string, number>();
    const first = await scanPendingDocuments(pool, store, documents, now, 20, failures);
    t.match(first, { pending: 3, recorded: 2, failed: 1, unavailable: false, setAside: [] }, 'the first pass goes on');
    t.equal((await statusOf(f, clean.id)).status, 'available', 'the clean file behind it was scanned and accepted');
    t.equal((await statusOf(f, infected.id)).status, 'infected', 'and the infected one refused');
    t.equal((await statusOf(f, oversized.id)).status, 'pending_scan', 'one error: it waits for another try');

    for (let attempt = 2; attempt < SCAN_ATTEMPTS; attempt++)
      t.match(await scanPendingDocuments(pool, store, documents, now, 20, failures), { failed: 1, setAside: [] });
    const last = await scanPendingDocuments(pool, store, documents, now, 20, failures);
    t.match(
      last,
      { pending: 1, recorded: 1, failed: 1, setAside: [oversized.id] },
      `set aside at try ${SCAN_ATTEMPTS}`,
    );

    const setAside = await statusOf(f, oversized.id);
    t.match(setAside, { status: 'scan_failed', scan_error: /clamd/, scan_signature: null });
    t.ok(setAside.scanned_at, 'with the time it was set aside');
    const events = await store.readStream(`document-${oversized.id}`);
    t.same(
      events.map((e) => e.type),
      ['document.received', 'document.scan_failed'],
    );
    t.match(events[1]!.data, { attempts: SCAN_ATTEMPTS, reason: setAside.scan_error });
    t.same(f.files(), { incoming: [], stored: [clean.id] }, 'its file deleted, never accepted');
    t.equal((await f.admin(`/documents/${oversized.id}/content`)).status, 409, 'never downloadable');
    const listed = (await (await f.admin('/documents')).json()) as { data: Document[] };
    t.match(
      listed.data.find((d) => d.id === oversized.id),
      { status: 'scan_failed', scan_error: setAside.scan_error },
      'the list shows it too',
    );
    t.match(
      await scanPendingDocuments(pool, store, documents, now, 20, failures),
      { pending: 0 },
      'the queue is empty',
    );
    t.equal(failures.size, 0, 'no count kept for a document no longer pending');
  },
);

t.test('the runner reaches the documents behind a failing one within one catch-up', { skip }, async (t) => {
  t.setTimeout(300_000);
  const f = await documentFixture(t, {}, { clamd: { streamMaxLength: STREAM_LIMIT } });
  const { oversized, clean, infected } = await uploadsWhileDown(t, f);
  const warnings: unknown[] = [];
  const log = { error: () => undefined, warn: (o: unknown) => warnings.push(o) };
  // One document a batch: the failing one is first in every batch until it is set aside.
  const runner = new DocumentScanRunner(f.app.services, log as never, { pollIntervalMs: 3_600_000, batchSize: 1 });
  runner.start();
  await runner.settled();
  await runner.stop();
  t.equal((await statusOf(f, oversized.id)).status, 'scan_failed');
  t.equal((await statusOf(f, clean.id)).status, 'available');
  t.equal((await statusOf(f, infected.id)).status, 'infected');
  t.same(warnings, [{ document_id: oversized.id }], 'the set-aside document is named in a warning');
});
