import { readdirSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import type { Document } from '../../src/domain/documents/index.js';
import { verifyChains } from '../../src/events/verify-chain.js';
import { projections } from '../../src/projections/index.js';
import { rebuildReadModels } from '../../src/projections/rebuild.js';
import { clamdSkipReason, pdfFile } from '../support/clamd.js';
import { searchEverywhere } from '../support/search-everywhere.js';
import { documentWebhookHarness } from '../documents/support.js';
import { waitFor } from '../webhooks/support/receiver.js';

// Erasing a person takes what hangs off their lead with them: documents (the files, the names they were uploaded
// under, the reasons staff gave), task titles, invoice lines, payment references and refund reasons, from the log
// (sealed under keys filed under the person), the read models and the delivery log.
const NAME = 'Zubeida Erasewell';
const FILE_LEAD = `${NAME} passport.pdf`;
const FILE_CASE = `Offer for ${NAME}.pdf`;
const REASON = `Photo of ${NAME} is blurred`;
const TITLE = `Call ${NAME} about the offer`;
const LINE = `Visa filing for ${NAME}`;
const REFERENCE = `UPI from Erasewell family`;
const REFUND = `Erasewell asked for it back`;
const NEEDLES = [NAME, 'Erasewell', FILE_LEAD, FILE_CASE, REASON, TITLE, LINE, REFERENCE, REFUND];

t.test(
  'erasing a person deletes their documents and every trace of them in documents, tasks and invoices',
  { skip: clamdSkipReason() },
  async (t) => {
    const { h, dataDir, upload: uploadForm } = await documentWebhookHarness(t);
    const endpoint = await h.createEndpoint({
      url: h.receiver.url(),
      events: ['document.uploaded', 'document.rejected'],
    });
    await h.startWorkers();
    const lead = await h.request('/v1/leads', {
      method: 'POST',
      key: h.ws.live,
      json: { full_name: NAME, email: 'zubeida.erasewell@example.org', consent: true },
    });
    const leadId = ((await lead.json()) as { id: string }).id;
    const keeper = await h.request('/v1/leads', {
      method: 'POST',
      key: h.ws.live,
      json: { full_name: 'Kept Person', email: 'kept.person@example.org', consent: true },
    });
    const keeperId = ((await keeper.json()) as { id: string }).id;
    const converted = await h.admin('POST', `/leads/${leadId}/convert`);
    const applicationId = ((await converted.json()) as { id: string }).id;
    const upload = async (
      subject: { lead_id: string } | { application_id: string },
      name: string,
      bytes = pdfFile(name),
    ) => {
      const response = await uploadForm({
        ...subject,
        type: 'passport',
        file: { bytes, name, type: 'application/pdf' },
      });
      t.equal(response.status, 201, `upload ${name}`);
      return (await response.json()) as Document;
    };
    const ofLead = await upload({ lead_id: leadId }, FILE_LEAD);
    const ofCase = await upload({ application_id: applicationId }, FILE_CASE);
    const kept = await upload({ lead_id: keeperId }, 'kept.pdf');
    t.equal((await h.admin('POST', `/documents/${ofLead.id}/reject`, { reason: REASON })).status, 200);
    const task = await h.admin('POST', '/tasks', {
      application_id: applicationId,
      title: TITLE,
      due_at: new Date(Date.now() + 3_600_000).toISOString(),
    });
    t.equal(task.status, 201);
    const taskId = ((await task.json()) as { id: string }).id;
    const invoice = await h.admin('POST', '/invoices', {
      lead_id: leadId,
      currency: 'INR',
      line_items: [{ description: LINE, quantity: 1, unit_amount: 150_000 }],
      due_date: '2026-12-31',
    });
    t.equal(invoice.status, 201);
    const invoiceId = ((await invoice.json()) as { id: string }).id;
    const paid = await h.admin('POST', `/invoices/${invoiceId}/payments`, {
      amount: 100_000,
      currency: 'INR',
      method: 'upi',
      reference: REFERENCE,
    });
    const paymentId = ((await paid.json()) as { payments: { id: string }[] }).payments[0]!.id;
    t.equal(
      (
        await h.admin('POST', `/invoices/${invoiceId}/payments/${paymentId}/refunds`, {
          amount: 10_000,
          reason: REFUND,
        })
      ).status,
      201,
    );
    const keptTask = await h.admin('POST', '/tasks', {
      lead_id: keeperId,
      title: 'Call Kept Person',
      due_at: new Date(Date.now() + 3_600_000).toISOString(),
    });
    t.equal(keptTask.status, 201);
    await waitFor(() => h.receiver.requests.length >= 4, 'four document deliveries');
    const stored = () => readdirSync(path.join(dataDir, 'documents', 'stored')).sort();
    t.same(stored(), [ofLead.id, ofCase.id, kept.id].sort());
    t.ok(
      (await searchEverywhere(h.pool, NEEDLES)).length > 0,
      'before: the names are in the read model and deliveries',
    );
    const sealed = await h.pool.query("SELECT count(*)::int AS n FROM events WHERE data::text ILIKE '%Erasewell%'");
    t.equal(sealed.rows[0].n, 0, 'the log holds them only sealed');

    t.equal((await h.admin('POST', `/leads/${leadId}/erase`)).status, 200);
    t.same(stored(), [kept.id], 'her files are deleted; the other person keeps theirs');
    t.same(await searchEverywhere(h.pool, NEEDLES), [], 'no table holds her file names or the reason');
    const read = (await (await h.admin('GET', `/documents/${ofLead.id}`)).json()) as Document;
    t.match(read, {
      id: ofLead.id,
      filename: '',
      rejection_reason: '',
      status: 'rejected',
      checksum_sha256: ofLead.checksum_sha256,
    });
    t.match(await (await h.admin('GET', `/documents/${kept.id}`)).json(), { filename: 'kept.pdf' });
    t.match(await (await h.admin('GET', `/tasks/${taskId}`)).json(), { title: '', status: 'open' });
    t.match(await (await h.admin('GET', `/invoices/${invoiceId}`)).json(), {
      line_items: [{ description: '', amount: 150_000 }],
      total: 150_000,
      payments: [{ reference: null, refunds: [{ reason: null, amount: 10_000 }] }],
    });
    t.equal(
      (await h.pool.query('SELECT count(*)::int AS n FROM task_timers WHERE task_id = $1', [taskId])).rows[0].n,
      1,
      "the erased task's timer is still armed",
    );
    const keptTitle = (await (await h.admin('GET', '/tasks?lead_id=' + keeperId)).json()) as {
      data: { title: string }[];
    };
    t.same(
      keptTitle.data.map((d) => d.title),
      ['Call Kept Person'],
      "the other person's task is untouched",
    );
    const change = await h.admin('PATCH', `/tasks/${taskId}`, {
      due_at: new Date(Date.now() + 7_200_000).toISOString(),
    });
    t.equal(change.status, 200, 'an erased task still takes a new due time');
    const retitle = await h.admin('PATCH', `/tasks/${taskId}`, { title: `Email ${NAME}` });
    t.equal(retitle.status, 409, 'but no new title naming anyone');
    t.match(await retitle.json(), { error: 'lead_erased' });
    const newTask = await h.admin('POST', '/tasks', {
      lead_id: leadId,
      title: 'Anything',
      due_at: new Date(Date.now() + 3_600_000).toISOString(),
    });
    t.equal(newTask.status, 409, 'an erased person takes no new task');

    const snapshot = async () => ({
      documents: (await h.pool.query('SELECT id, body FROM documents ORDER BY id')).rows,
      tasks: (await h.pool.query('SELECT id, state, body FROM tasks ORDER BY id')).rows,
      timers: (await h.pool.query('SELECT * FROM task_timers ORDER BY task_id')).rows,
      invoices: (await h.pool.query('SELECT id, body FROM invoices ORDER BY id')).rows,
    });
    const before = await snapshot();
    await rebuildReadModels(h.pool, projections, h.services.personalData);
    t.same(await snapshot(), before, 'a rebuild reads the same');
    t.equal((await verifyChains(h.pool, h.ws.workspace.id)).broken, null, 'the chains still verify');

    // A resend of the earlier document.uploaded carries no name; a new upload for her is refused.
    const uploadedEvent = (await h.services.store.readStream(`document-${ofCase.id}`)).find(
      (e) => e.type === 'document.uploaded',
    )!;
    const delivery = await h.pool.query<{ id: string }>(
      'SELECT id FROM webhook_deliveries WHERE event_id = $1 AND resend_of IS NULL',
      [uploadedEvent.id],
    );
    t.equal((await h.admin('POST', `/webhooks/${endpoint.id}/deliveries/${delivery.rows[0]!.id}/resend`)).status, 201);
    await waitFor(() => h.receiver.forEvent(uploadedEvent.id).length === 2, 'the resend arrives');
    t.notMatch(h.receiver.forEvent(uploadedEvent.id)[1]!.body, /Erasewell/, 'the resend carries no name');
    const refused = await uploadForm({
      lead_id: leadId,
      type: 'passport',
      file: { bytes: pdfFile(), name: 'again.pdf', type: 'application/pdf' },
    });
    t.equal(refused.status, 409);
    t.match(await refused.json(), { error: 'lead_erased' });
    t.same(stored(), [kept.id], 'and nothing of it is kept');
  },
);
