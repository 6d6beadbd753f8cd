import t from 'tap';
import { Value } from 'typebox/value';
import type { Document } from '../../src/domain/documents/index.js';
import { Document as DocumentSchema } from '../../src/http/schemas/document.js';
import { verifyWebhook } from '../../src/webhooks/verify.js';
import { clamdSkipReason, pdfFile, TEST_MALWARE_MARKER } from '../support/clamd.js';
import { documentWebhookHarness } from './support.js';
import { waitFor } from '../webhooks/support/receiver.js';

t.test(
  'document.uploaded and document.rejected reach a real HTTPS receiver, signed, with the Document as data',
  { skip: clamdSkipReason() },
  async (t) => {
    const { h, clamd, upload: uploadForm } = await documentWebhookHarness(t);
    const endpoint = await h.createEndpoint({
      url: h.receiver.url('127.0.0.1', '/document-hooks'),
      events: ['document.uploaded', 'document.rejected'],
    });
    await h.startWorkers({ documentScanIntervalMs: 50 });
    const lead = await h.request('/v1/leads', {
      method: 'POST',
      key: h.ws.live,
      json: { full_name: 'Document Hook', email: 'document.hook@example.org', consent: true },
    });
    const leadId = ((await lead.json()) as { id: string }).id;
    const upload = (bytes: Buffer, name: string) =>
      uploadForm({ lead_id: leadId, type: 'offer_letter', file: { bytes, name, type: 'application/pdf' } });

    const first = await upload(pdfFile('offer'), 'offer.pdf');
    t.equal(first.status, 201);
    const uploaded = (await first.json()) as Document;
    t.equal((await upload(pdfFile(TEST_MALWARE_MARKER), 'bad.pdf')).status, 422, 'the infected one is refused');
    // One that arrives while the scanner is down is announced once the scan runner gets to it.
    await clamd.stop();
    const late = await upload(pdfFile('late'), 'late.pdf');
    t.equal(late.status, 202);
    const lateId = ((await late.json()) as Document).id;
    await clamd.start();
    const rejected = (await (
      await h.admin('POST', `/documents/${uploaded.id}/reject`, { reason: 'Unsigned copy' })
    ).json()) as Document;

    const requests = await waitFor(
      () => (h.receiver.requests.length >= 3 ? h.receiver.requests : null),
      'three deliveries',
    );
    const envelopes = requests.map((r) =>
      verifyWebhook({ body: r.body, signature: r.headers['x-service-signature'], secret: endpoint.secret }),
    );
    for (const e of envelopes) t.ok(Value.Check(DocumentSchema, e.data), `${e.event}: data is the documented Document`);
    const of = (event: string, id: string) =>
      envelopes.filter((e) => e.event === event && (e.data as unknown as Document).id === id).map((e) => e.data);
    t.same(of('document.uploaded', uploaded.id), [uploaded], 'uploaded: the Document as the upload answered');
    t.same(of('document.rejected', uploaded.id), [rejected], 'rejected: the Document as rejected');
    t.match(of('document.uploaded', lateId), [{ id: lateId, status: 'available' }], 'the late one, once scanned');
    await new Promise((r) => setTimeout(r, 300));
    t.equal(h.receiver.requests.length, 3, 'nothing for the infected upload or the internal events');
  },
);
