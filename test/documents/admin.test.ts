import { createHash } from 'node:crypto';
import t from 'tap';
import { Value } from 'typebox/value';
import { Document as DocumentSchema } from '../../src/http/schemas/document.js';
import { clamdSkipReason, EICAR, pdfFile, PNG_FILE, TEST_MALWARE_MARKER } from '../support/clamd.js';
import { documentFixture, documentOf } from './support.js';

const skip = clamdSkipReason();
const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

t.test('a clean file is scanned, stored, listed, downloaded with its checksum and rejected', { skip }, async (t) => {
  const f = await documentFixture(t);
  const leadId = await f.lead();
  const bytes = pdfFile('a clean passport scan');
  const document = await documentOf(
    t,
    await f.upload({
      lead_id: leadId,
      type: 'passport',
      file: { bytes, name: 'Passport – Priya.pdf', type: 'application/pdf' },
    }),
    201,
  );
  t.ok(Value.Check(DocumentSchema, document), 'the answer is the documented Document');
  t.match(document, {
    lead_id: leadId,
    application_id: null,
    type: 'passport',
    filename: 'Passport – Priya.pdf',
    content_type: 'application/pdf',
    size: bytes.length,
    checksum_sha256: sha256(bytes),
    status: 'available',
    scan_signature: null,
  });
  t.ok(document.scanned_at, 'scanned');
  t.same(f.files(), { incoming: [], stored: [document.id] }, 'stored, nothing left in incoming');
  t.same(
    (await f.app.services.store.readStream(`document-${document.id}`)).map((e) => e.type),
    ['document.received', 'document.uploaded'],
  );

  const download = await f.admin(`/documents/${document.id}/content`);
  t.equal(download.status, 200);
  t.same(Buffer.from(await download.arrayBuffer()), bytes, 'the same bytes back');
  t.equal(download.headers.get('content-type'), 'application/pdf');
  t.equal(download.headers.get('repr-digest'), `sha-256=:${Buffer.from(sha256(bytes), 'hex').toString('base64')}:`);
  t.equal(download.headers.get('etag'), `"${sha256(bytes)}"`);
  t.match(
    download.headers.get('content-disposition'),
    /^attachment; filename="Passport \? Priya\.pdf"; filename\*=UTF-8''Passport%20%E2%80%93%20Priya\.pdf$/,
  );

  t.same(((await (await f.admin(`/documents?lead_id=${leadId}`)).json()) as { data: unknown[] }).data, [document]);
  t.same(await (await f.admin(`/documents/${document.id}`)).json(), document);

  const emptyReason = await f.admin(`/documents/${document.id}/reject`, { method: 'POST', json: { reason: '  ' } });
  t.equal(emptyReason.status, 400, 'a blank reason is refused');
  const rejected = await documentOf(
    t,
    await f.admin(`/documents/${document.id}/reject`, { method: 'POST', json: { reason: 'Photo page is blurred' } }),
    200,
  );
  t.match(rejected, { status: 'rejected', rejection_reason: 'Photo page is blurred' });
  const again = await documentOf(
    t,
    await f.admin(`/documents/${document.id}/reject`, { method: 'POST', json: { reason: 'Other words' } }),
    200,
  );
  t.same(again, rejected, 'rejecting a rejected document changes nothing');
  t.equal((await f.app.services.store.readStream(`document-${document.id}`)).length, 3, 'one document.rejected');
  t.equal((await f.admin(`/documents/${document.id}/content`)).status, 200, 'a rejected document stays downloadable');

  const png = await documentOf(
    t,
    await f.upload({
      application_id: (await f.convert(await f.lead())).id,
      type: 'photo',
      file: { bytes: PNG_FILE, name: 'me.png' },
    }),
    201,
  );
  t.match(png, { content_type: 'image/png', lead_id: null }, 'no declared type: the bytes decide');
});

t.test('an infected file is refused, recorded, never stored and never announced', { skip }, async (t) => {
  const f = await documentFixture(t);
  const leadId = await f.lead();
  const response = await f.upload({
    lead_id: leadId,
    type: 'transcript',
    file: { bytes: pdfFile(TEST_MALWARE_MARKER), name: 'transcript.pdf', type: 'application/pdf' },
  });
  t.equal(response.status, 422);
  const body = (await response.json()) as { error: string; message: string; request_id: string };
  t.equal(body.error, 'document_infected');
  t.match(body.message, /VisaCrm\.Test\.Marker/);
  t.same(f.files(), { incoming: [], stored: [] }, 'the file is gone');
  const [recorded] = (
    (await (await f.admin(`/documents?lead_id=${leadId}`)).json()) as {
      data: { id: string; status: string; scan_signature: string }[];
    }
  ).data;
  t.match(
    recorded,
    { status: 'infected', scan_signature: 'VisaCrm.Test.Marker.UNOFFICIAL' },
    'the attempt is recorded',
  );
  t.same(
    (await f.app.services.store.readStream(`document-${recorded!.id}`)).map((e) => e.type),
    ['document.received', 'document.infected'],
    'no document.uploaded',
  );
  const download = await f.admin(`/documents/${recorded!.id}/content`);
  t.equal(download.status, 409);
  t.match(await download.json(), { error: 'document_not_available' });
  const reject = await f.admin(`/documents/${recorded!.id}/reject`, { method: 'POST', json: { reason: 'x' } });
  t.equal(reject.status, 409);
});

t.test('type, size, content type and subject are checked before anything is kept', { skip }, async (t) => {
  const f = await documentFixture(t, {
    document_types: [
      { key: 'passport', name: 'Passport', max_size_bytes: 2_000, content_types: ['application/pdf'] },
      { key: 'photo', name: 'Photo', content_types: ['image/jpeg', 'image/png'] },
    ],
  });
  const leadId = await f.lead();
  const refused = async (
    form: Parameters<typeof f.upload>[0],
    status: number,
    error: string,
    field?: string,
  ): Promise<void> => {
    const response = await f.upload(form);
    const body = (await response.json()) as { error: string; fields?: Record<string, string> };
    t.equal(response.status, status, `${error}: ${JSON.stringify(body)}`);
    t.equal(body.error, error);
    if (field) t.ok(body.fields?.[field], `names ${field}`);
  };
  const pdf = { bytes: pdfFile(), name: 'p.pdf', type: 'application/pdf' };
  await refused({ lead_id: leadId, type: 'diploma', file: pdf }, 400, 'validation_failed', 'type');
  await refused({ lead_id: leadId, type: 'passport' }, 400, 'validation_failed', 'file');
  await refused({ type: 'passport', file: pdf }, 400, 'validation_failed', 'lead_id');
  await refused({ lead_id: 'not-a-uuid', type: 'passport', file: pdf }, 400, 'validation_failed', 'lead_id');
  await refused({ lead_id: '0190a000-0000-7000-8000-000000000000', type: 'passport', file: pdf }, 404, 'not_found');
  await refused(
    { lead_id: leadId, type: 'passport', file: { bytes: pdfFile('x'.repeat(3_000)), name: 'big.pdf' } },
    413,
    'document_too_large',
  );
  await refused(
    { lead_id: leadId, type: 'passport', file: { bytes: PNG_FILE, name: 'p.png' } },
    415,
    'unsupported_content_type',
  );
  await refused(
    { lead_id: leadId, type: 'photo', file: { ...pdf, type: 'image/png' } },
    415,
    'unsupported_content_type',
  );
  await refused(
    { lead_id: leadId, type: 'photo', file: { bytes: Buffer.from(EICAR), name: 'eicar.com', type: 'text/plain' } },
    415,
    'unsupported_content_type',
  );
  await refused(
    { lead_id: leadId, type: 'passport', file: { bytes: Buffer.alloc(0), name: 'empty.pdf' } },
    400,
    'validation_failed',
    'file',
  );
  t.same(f.files(), { incoming: [], stored: [] }, 'no refused file was kept');
  t.equal((await f.app.pool.query('SELECT count(*)::int AS n FROM documents')).rows[0].n, 0, 'nothing recorded');

  const json = await f.admin('/documents', { method: 'POST', json: { lead_id: leadId, type: 'passport' } });
  t.equal(json.status, 400, 'a JSON body is no upload');
  const otherMode = await f.upload({ lead_id: await f.lead(f.ws.test), type: 'passport', file: pdf });
  t.equal(otherMode.status, 404, "a sandbox lead is not live data's");
  const sandbox = await f.upload({ lead_id: await f.lead(f.ws.test), type: 'passport', file: pdf }, { sandbox: true });
  t.equal(sandbox.status, 201, 'in sandbox mode it is');
  t.same(((await (await f.admin('/documents')).json()) as { data: unknown[] }).data, [], 'not among live documents');
});

t.test('a multipart body the parser cannot read is a 400 in the Error shape, never a 500', { skip }, async (t) => {
  const f = await documentFixture(t);
  const leadId = await f.lead();
  const part = (boundary: string) =>
    `--${boundary}\r\nContent-Disposition: form-data; name="type"\r\n\r\npassport\r\n` +
    `--${boundary}\r\nContent-Disposition: form-data; name="lead_id"\r\n\r\n${leadId}\r\n` +
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.pdf"\r\n` +
    'Content-Type: application/pdf\r\n\r\n%PDF-1.4 a few bytes';
  const bodies: [string, string, string][] = [
    ['no boundary in the content type', 'multipart/form-data', part('b0undary')],
    ['another boundary than the body’s', 'multipart/form-data; boundary=elsewhere', part('b0undary')],
    ['a body cut short', 'multipart/form-data; boundary=b0undary', part('b0undary')],
  ];
  for (const [what, contentType, body] of bodies) {
    const answer = await f.app.request(`/admin/v1/workspaces/${f.ws.workspace.slug}/documents`, {
      method: 'POST',
      headers: { authorization: `Bearer ${f.ws.staffToken}`, 'content-type': contentType },
      body,
    });
    t.equal(answer.status, 400, what);
    const error = (await answer.json()) as { error: string; message: string; request_id: string };
    t.equal(error.error, 'invalid_request', `${what}: its code`);
    t.equal(error.request_id, answer.headers.get('request-id'), `${what}: the Error shape`);
  }
  t.same(f.files(), { incoming: [], stored: [] }, 'nothing kept');
});

t.test('a second file part, or a file in another field, is a 400 naming the field, nothing kept', async (t) => {
  const f = await documentFixture(t);
  const leadId = await f.lead();
  const send = async (files: [string, string][]) => {
    const form = new FormData();
    form.set('type', 'passport');
    form.set('lead_id', leadId);
    for (const [field, name] of files)
      form.append(field, new Blob(['%PDF-1.4\n%%EOF\n'], { type: 'application/pdf' }), name);
    const answer = await f.app.request(`/admin/v1/workspaces/${f.ws.workspace.slug}/documents`, {
      method: 'POST',
      headers: { authorization: `Bearer ${f.ws.staffToken}` },
      body: form,
    });
    return { status: answer.status, body: (await answer.json()) as Record<string, unknown> };
  };
  t.match(
    await send([
      ['file', 'a.pdf'],
      ['file', 'b.pdf'],
    ]),
    { status: 400, body: { error: 'validation_failed', fields: { file: /one file part only/ } } },
    'two file parts: 400 naming file (it was 413 invalid_request)',
  );
  t.match(
    await send([['passport', 'a.pdf']]),
    { status: 400, body: { error: 'validation_failed', fields: { passport: /only the field file takes one/ } } },
    'a file in another field: 400 naming that field',
  );
  t.same(f.files(), { incoming: [], stored: [] }, 'nothing kept');
});
