import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { memberOf } from '../identity/support.js';
import { clamdSkipReason, EICAR, pdfFile, TEST_MALWARE_MARKER, TestClamd } from '../support/clamd.js';
import { consoleFixture, type ConsoleClient } from './support.js';

async function upload(
  c: ConsoleClient,
  url: string,
  type: string,
  file: { bytes: Buffer; name: string; type: string },
) {
  // The upload form carries its CSRF token in its action, so it is checked before the file is read; a member shown
  // no form (a viewer) sends their own token the same way.
  const form = await c.get(url);
  const shown = /<form method="post" action="([^"]+)" enctype="multipart\/form-data"/.exec(form.text)?.[1];
  const action = shown ?? `${url}&_csrf=${await c.csrf()}`;
  const body = new FormData();
  body.set('type', type);
  body.set('file', new Blob([file.bytes], { type: file.type }), file.name);
  const response = await fetch(c.app.baseUrl + action.replaceAll('&amp;', '&'), {
    method: 'POST',
    redirect: 'manual',
    headers: { cookie: c.cookie!, origin: c.app.baseUrl },
    body,
  });
  return { status: response.status, text: await response.text(), location: response.headers.get('location') };
}

t.test(
  'documents with a real clamd: clean accepted, EICAR refused, waiting never accepted; download; reject',
  { skip: clamdSkipReason() },
  async (t) => {
    const clamd = await TestClamd.start();
    t.teardown(() => clamd.close());
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'vcrm-console-docs-'));
    t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
    const f = await consoleFixture(t, { config: { clamdAddress: clamd.address, dataDir } });
    const created = await f.app.request('/v1/leads', {
      method: 'POST',
      key: f.ws.live,
      json: { full_name: 'Zoya Mirza', phone: '+919811199900', consent: true },
    });
    const leadId = ((await created.json()) as { id: string }).id;
    const c = f.client();
    await c.signIn(memberOf('counsellor'));
    const page = `/console/w/${f.ws.workspace.slug}/documents?lead=${leadId}`;
    const bytes = pdfFile('a clean passport scan');
    const clean = await upload(c, page, 'passport', { bytes, name: 'passport.pdf', type: 'application/pdf' });
    t.equal(clean.status, 303);
    t.match(clean.location, /done=available$/);
    const listed = await c.get(`${page}&done=available`);
    t.match(listed.text, 'The file was scanned clean and accepted.');
    t.match(listed.text, /passport\.pdf[\s\S]*?Scanned clean and accepted/);
    const id = /documents\/([0-9a-f-]{36})\/content/.exec(listed.text)![1]!;
    const download = await fetch(`${f.app.baseUrl}/console/w/${f.ws.workspace.slug}/documents/${id}/content`, {
      headers: { cookie: c.cookie! },
    });
    t.equal(download.status, 200);
    t.same(Buffer.from(await download.arrayBuffer()), bytes, 'the same bytes back');

    // EICAR alone is no PDF, JPEG or PNG: refused by its type before a scan, in words by the file field.
    const eicar = await upload(c, page, 'photo', { bytes: Buffer.from(EICAR), name: 'eicar.png', type: 'image/png' });
    t.equal(eicar.status, 415);
    t.match(eicar.text, /id="f-file-error" role="alert">[^<]+/);
    // A PDF carrying the test signature the suite's clamd database flags: refused by the scan, and recorded.
    const infected = await upload(c, page, 'passport', {
      bytes: pdfFile(TEST_MALWARE_MARKER),
      name: 'infected.pdf',
      type: 'application/pdf',
    });
    t.equal(infected.status, 422);
    t.match(infected.text, /id="f-file-error" role="alert">The virus scan found/, 'the verdict next to the file field');
    t.match(infected.text, /infected\.pdf[\s\S]*?Refused by the virus scan; the file was deleted/);

    const noFile = await upload(c, page, 'passport', { bytes: Buffer.alloc(0), name: '', type: 'application/pdf' });
    t.equal(noFile.status, 400);
    t.match(noFile.text, /id="f-file-error" role="alert">Choose a file/);

    const badOrigin = new FormData();
    badOrigin.set('_csrf', await c.csrf());
    badOrigin.set('type', 'passport');
    badOrigin.set('file', new Blob([bytes], { type: 'application/pdf' }), 'x.pdf');
    const crossSite = await fetch(f.app.baseUrl + page, {
      method: 'POST',
      headers: { cookie: c.cookie!, origin: 'https://evil.example' },
      body: badOrigin,
    });
    t.equal(crossSite.status, 403, 'another site’s upload is refused');
    t.same(
      (await f.app.pool.query('SELECT 1 FROM documents WHERE tenant_id = $1', [f.ws.workspace.id])).rowCount,
      2,
      'and recorded nothing',
    );

    const viewer = f.client();
    await viewer.signIn(memberOf('viewer'));
    t.equal((await upload(viewer, page, 'passport', { bytes, name: 'v.pdf', type: 'application/pdf' })).status, 403);
    const documentPath = `/console/w/${f.ws.workspace.slug}/documents/${id}`;
    const viewerPage = await viewer.get(documentPath);
    t.equal(viewerPage.status, 200, 'a viewer opens a document’s page');
    t.match(viewerPage.text, '<h1>passport.pdf</h1>');
    t.match(viewerPage.text, 'Download the file');
    t.notMatch(viewerPage.text, '/reject"', 'and is offered no rejection');
    t.match((await c.get(documentPath)).text, `action="${documentPath}/reject"`, 'staff are, while it is accepted');

    const reject = `/console/w/${f.ws.workspace.slug}/documents/${id}/reject`;
    const blank = await c.post(reject, { reason: '  ' });
    t.equal(blank.status, 400);
    t.match(blank.text, /id="f-reason-error">Say why/);
    t.equal((await c.post(reject, { reason: 'The scan is blurred' })).status, 303);
    t.match((await c.get(page)).text, /Rejected by staff: The scan is blurred/);

    await clamd.close();
    const waiting = await upload(c, page, 'passport', {
      bytes: pdfFile('waits'),
      name: 'waits.pdf',
      type: 'application/pdf',
    });
    t.equal(waiting.status, 303);
    t.match(waiting.location, /done=pending_scan$/);
    const shown = await c.get(`${page}&done=pending_scan`);
    t.match(shown.text, /waits\.pdf[\s\S]*?Waiting for the virus scan: not accepted yet/);
    t.notMatch(
      /waits\.pdf[\s\S]*?<\/tr>/.exec(shown.text)![0],
      /Scanned clean|content"/,
      'never shown as accepted nor downloadable',
    );
    const waitingId = new RegExp(`documents/([0-9a-f-]{36})">waits\\.pdf`).exec(shown.text)![1]!;
    const waitingPage = await c.get(`/console/w/${f.ws.workspace.slug}/documents/${waitingId}`);
    t.equal(waitingPage.status, 200);
    t.match(waitingPage.text, '<h1>waits.pdf</h1>', 'titled by its file, not "Reject …"');
    t.notMatch(waitingPage.text, /Reject|\/reject"/, 'no rejection is offered while the scan is awaited');
    t.match(waitingPage.text, 'Waiting for the virus scan');
  },
);
