import multipart, { type MultipartFile } from '@fastify/multipart';
import contentDisposition from 'content-disposition';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type, type Static } from 'typebox';
import type { AppServices } from '../../bootstrap.js';
import { handleDocumentCommand, receiveUpload, recordUpload } from '../../commands/documents/document-commands.js';
import { isCommandError } from '../../commands/errors.js';
import { subjectOf } from '../../commands/subject.js';
import { documentTypesOf, MAX_DOCUMENT_BYTES, REASON_MAX, type Document } from '../../domain/documents/index.js';
import type { TypedApp } from '../../http/typed-app.js';
import { can } from '../../identity/permissions.js';
import { findDocument, listDocuments } from '../../projections/documents.js';
import { allow, ConsoleRefusal, sendPage, type MemberView } from '../context.js';
import { html, type Html, table } from '../html.js';
import { choice, csrfField, notice, page } from '../layout.js';
import { contextOf, refusalErrors, textArea } from '../forms.js';
import { viewOf } from '../routes.js';
import { partsAsText } from '../validation.js';
import { isUnreadableMultipart } from '../../documents/unreadable-multipart.js';
import { Csrf, formBody, IdParams, OptionalText, SlugParams, Text, Uuid } from '../schemas.js';

const UNREADABLE_FORM = 'The form could not be read; nothing was done.';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const base = (view: MemberView) => `/console/w/${view.workspace.slug}/documents`;
type Form = Record<string, string | undefined>;
type Errors = Record<string, string>;

/** Each status in words: a file waiting for the scanner is never called accepted. */
const VERDICT: Record<Document['status'], string> = {
  pending_scan: 'Waiting for the virus scan: not accepted yet, and not downloadable',
  available: 'Scanned clean and accepted',
  infected: 'Refused by the virus scan; the file was deleted',
  rejected: 'Rejected by staff',
  scan_failed: 'The virus scanner could not read this file: set aside, never accepted; the file was deleted',
};

const MESSAGES: Record<string, string> = {
  available: 'The file was scanned clean and accepted.',
  pending_scan:
    'The file was received and is waiting for the virus scanner: it is not accepted until the scan passes. Check again shortly.',
  rejected: 'The document was rejected.',
};

interface PendingUpload {
  upload: Awaited<ReturnType<typeof receiveUpload>>;
  filename: string;
  mimetype: string;
  recorded: boolean;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The file of a console upload, streamed into the incoming area as it arrives (as the admin route does). */
    consoleUpload: PendingUpload | null;
  }
}

async function documentsPage(
  services: AppServices,
  view: MemberView,
  query: Form,
  o: { errors?: Errors; message?: string } = {},
): Promise<string> {
  allow(view, 'documents.view');
  const subject = {
    lead_id: UUID.test(query.lead ?? '') ? query.lead : undefined,
    application_id: UUID.test(query.application ?? '') ? query.application : undefined,
  };
  const bySubject = Boolean(subject.lead_id || subject.application_id);
  const documents = bySubject ? await listDocuments(services.pool, view.workspace.id, false, subject) : [];
  const errors = o.errors ?? {};
  const self = `${base(view)}?${subject.lead_id ? `lead=${subject.lead_id}` : `application=${subject.application_id}`}`;
  const upload = bySubject && can(view.role, 'documents.upload') ? uploadSection(view, self, errors) : '';
  return page(
    view.frame('Documents', 'Documents'),
    html`${notice(o.message)}
    ${
      bySubject
        ? html`${table({ caption: `Documents of this ${subject.lead_id ? 'lead' : 'application'}`, headings: ['File', 'Type', 'Size', 'Scan and verdict', 'Do'], rows: documents.map((d) => documentRow(view, self, d)) })}
          ${documents.length === 0 ? html`<p>No document yet.</p>` : ''}`
        : html`<p>Documents belong to a lead or an application: open them from its page.</p>`
    }
    ${upload}`,
  );
}

function uploadSection(view: MemberView, self: string, errors: Errors): Html {
  const types = documentTypesOf(view.workspace.settings);
  return html`<section aria-labelledby="upload">
    <h2 id="upload">Upload a document</h2>
    <form method="post" action="${self}&_csrf=${view.signedIn.csrf}" enctype="multipart/form-data">
      ${choice({ name: 'type', label: 'Type', options: types.map((t) => [t.key, t.name]), error: errors.type })}
      <div class="field${errors.file ? ' invalid' : ''}">
        <label for="f-file">File (PDF, JPEG or PNG)</label>
        <input
          id="f-file"
          name="file"
          type="file"
          required
          ${errors.file ? html`aria-invalid="true" aria-describedby="f-file-error"` : ''}
        />
        ${errors.file ? html`<p class="error" id="f-file-error" role="alert">${errors.file}</p>` : ''}
      </div>
      <button type="submit">Upload and scan</button>
    </form>
  </section>`;
}

/** One document: its file, type, size, scan verdict, and what the member may do with it. */
function documentRow(view: MemberView, self: string, d: Document): Html {
  return html`<tr>
    <td><a href="${base(view)}/${d.id}">${d.filename || '(file name erased)'}</a></td>
    <td>${typeName(view, d.type)}</td>
    <td>${d.size} bytes</td>
    <td class="verdict-${d.status}">
      ${VERDICT[d.status]}${d.scan_signature ? ` (${d.scan_signature})` : ''}${d.rejection_reason ? `: ${d.rejection_reason}` : ''}
      ${d.status === 'pending_scan' ? html`<a href="${self}">Check again</a>` : ''}
    </td>
    <td>
      ${
        d.status === 'available' || d.status === 'rejected'
          ? html`<a href="${base(view)}/${d.id}/content" download
              >Download<span class="visually-hidden"> ${d.filename}</span></a
            >`
          : ''
      }
      ${d.status === 'available' && can(view.role, 'documents.reject') ? html`<a href="${base(view)}/${d.id}">Reject…<span class="visually-hidden"> ${d.filename}</span></a>` : ''}
    </td>
  </tr>`;
}

/** A document type by the name the workspace gives it. */
const typeName = (view: MemberView, key: string) =>
  documentTypesOf(view.workspace.settings).find((t) => t.key === key)?.name ?? key.replaceAll('_', ' ');

/**
 * A document's page, for anyone who may read documents: its file, type, scan verdict and where it belongs; the
 * download while the file is kept; and, for a member who may reject documents, the rejection form while the document
 * is accepted (a file waiting for its scan, refused or already rejected cannot be rejected).
 */
async function documentPage(services: AppServices, view: MemberView, id: string, errors: Errors = {}) {
  allow(view, 'documents.view');
  const document = await findDocument(services.pool, view.workspace.id, false, id);
  if (!document) throw new ConsoleRefusal(404, 'There is no such document in this workspace.');
  const name = document.filename || 'A document (file name erased)';
  const owner = document.lead_id
    ? html`<a href="${base(view)}?lead=${document.lead_id}">the other documents of this lead</a>`
    : html`<a href="${base(view)}?application=${document.application_id}">the other documents of this application</a>`;
  const mayReject = can(view.role, 'documents.reject') && document.status === 'available';
  return page(
    view.frame(name, 'Documents'),
    html`<dl class="facts">
        <dt>Type</dt>
        <dd>${typeName(view, document.type)}</dd>
        <dt>Size</dt>
        <dd>${document.size} bytes</dd>
        <dt>Scan and verdict</dt>
        <dd>${VERDICT[document.status]}${document.rejection_reason ? `: ${document.rejection_reason}` : ''}</dd>
      </dl>
      <p>
        ${
          document.status === 'available' || document.status === 'rejected'
            ? html`<a href="${base(view)}/${id}/content" download>Download the file</a> · `
            : ''
        }See
        ${owner}.
      </p>
      ${
        mayReject
          ? html`<section aria-labelledby="reject">
              <h2 id="reject">Reject this document</h2>
              <p>
                Rejecting tells everyone working on the case that this file will not do, with your reason; the file
                stays readable. A rejection cannot be withdrawn: the client uploads a new file instead.
              </p>
              ${errors.form ? notice(errors.form, 'alert') : ''}
              <form method="post" action="${base(view)}/${id}/reject">
                ${csrfField(view.signedIn.csrf)}
                ${textArea({ name: 'reason', label: 'Why it is rejected', error: errors.reason })}
                <button type="submit" class="danger">Reject the document</button>
              </form>
            </section>`
          : errors.form
            ? notice(errors.form, 'alert')
            : ''
      }`,
  );
}

// The upload's CSRF token is in the form's action (checked before the file is read: src/console/plugin.ts); the
// file's part holds the id of the upload received into the incoming area.
const UploadQuery = Type.Object({
  lead: Type.Optional(Uuid),
  application: Type.Optional(Uuid),
  _csrf: Csrf,
});
const UploadBody = Type.Object({
  type: Text({ max: 60, message: 'Choose a type.' }),
  file: OptionalText({ max: 100, message: 'Choose a file to upload.' }),
});
const DocumentsQuery = Type.Object({
  lead: Type.Optional(Uuid),
  application: Type.Optional(Uuid),
  done: OptionalText({ max: 40 }),
});
const RejectBody = formBody({
  reason: Text({ max: REASON_MAX, multiline: true, message: 'Say why, in at most 1,000 characters.' }),
});

/** The upload form posted (its file already in the incoming area): the document recorded and scanned, or why not. */
async function uploadDocument(
  services: AppServices,
  request: FastifyRequest,
  reply: FastifyReply,
  query: Static<typeof UploadQuery>,
  form: Static<typeof UploadBody>,
) {
  const view = viewOf(request);
  const refuse = async (status: number, errors: Errors) =>
    sendPage(reply, await documentsPage(services, view, query, { errors }), status);
  const pending = request.consoleUpload;
  if (!pending || pending.upload.file.size === 0) return refuse(400, { file: 'Choose a file to upload.' });
  if (pending.upload.file.truncated)
    return refuse(413, { file: `A document is at most ${MAX_DOCUMENT_BYTES.toLocaleString('en')} bytes.` });
  const { lead, application } = query;
  pending.recorded = true;
  try {
    const document = await recordUpload(
      services.store,
      services.documents,
      contextOf(view)(services.now()),
      documentTypesOf(view.workspace.settings),
      pending.upload,
      {
        subject: subjectOf({ lead_id: lead, application_id: application }),
        document_type: form.type,
        filename: pending.filename,
        declared_content_type: pending.mimetype === 'application/octet-stream' ? null : pending.mimetype,
      },
    );
    const back = lead ? `lead=${lead}` : `application=${application}`;
    return reply.redirect(`${base(view)}?${back}&done=${document.status}`, 303);
  } catch (error) {
    pending.recorded = false;
    if (!isCommandError(error)) throw error;
    const refused = refusalErrors(error, { type: 'type', document_type: 'type' }, 'file');
    return refuse(refused.status, refused.errors);
  }
}

export function registerDocumentPages(app: TypedApp, services: AppServices): void {
  const { storage } = services.documents;

  app.get(
    '/w/:slug/documents',
    {
      schema: { params: SlugParams, querystring: DocumentsQuery },
      config: { console: { operation: 'documents.view' } },
    },
    async (request, reply) => {
      const view = viewOf(request);
      const query = request.query;
      return sendPage(reply, await documentsPage(services, view, query, { message: MESSAGES[query.done ?? ''] }));
    },
  );

  // The upload streams its file to the incoming area while the form is parsed: the console's session, Origin, CSRF
  // (in the action's query) and role checks run before (onRequest), and a file whose request is then refused (its
  // schema, or the command) is deleted before the answer is sent.
  void app.register(async (scope: TypedApp) => {
    scope.decorateRequest('consoleUpload', null);
    await scope.register(multipart, {
      attachFieldsToBody: 'keyValues',
      limits: { fileSize: MAX_DOCUMENT_BYTES + 1, files: 1, fields: 4, fieldSize: 1024, parts: 5, headerPairs: 50 },
      async onFile(this: FastifyRequest, part: MultipartFile) {
        if (part.fieldname !== 'file') {
          part.file.resume();
          return;
        }
        const upload = await receiveUpload(storage, services.now(), part.file);
        this.consoleUpload = { upload, filename: part.filename, mimetype: part.mimetype, recorded: false };
        (part as unknown as { value: string }).value = upload.id;
      },
    });
    scope.addHook('onSend', async (request) => {
      const pending = request.consoleUpload;
      if (pending && !pending.recorded) await storage.discard(pending.upload.id);
    });
    // The parser refuses a body it cannot read with a plain error, no status: the sender's form, so a 400 page from
    // the console's error handler, which gets every other error as it was thrown.
    scope.setErrorHandler((error) => {
      throw isUnreadableMultipart(error) ? new ConsoleRefusal(400, UNREADABLE_FORM) : error;
    });

    scope.post(
      '/w/:slug/documents',
      {
        schema: { params: SlugParams, querystring: UploadQuery, body: UploadBody },
        config: {
          console: { operation: 'documents.upload' },
          onInvalid: async (request, errors) =>
            documentsPage(services, viewOf(request), partsAsText(request).query, { errors }),
        },
      },
      async (request, reply) => uploadDocument(services, request, reply, request.query, request.body),
    );
  });

  app.get(
    '/w/:slug/documents/:id',
    { schema: { params: IdParams }, config: { console: { operation: 'documents.view' } } },
    async (request, reply) => sendPage(reply, await documentPage(services, viewOf(request), request.params.id)),
  );

  app.post(
    '/w/:slug/documents/:id/reject',
    {
      schema: { params: IdParams, body: RejectBody },
      config: {
        console: { operation: 'documents.reject' },
        onInvalid: async (request, errors) =>
          documentPage(services, viewOf(request), partsAsText(request).params.id ?? '', errors),
      },
    },
    async (request, reply) => {
      const view = viewOf(request);
      const id = request.params.id;
      const reason = request.body.reason.trim();
      if (!reason) return sendPage(reply, await documentPage(services, view, id, { reason: 'Say why.' }), 400);
      try {
        const { state } = await handleDocumentCommand(services.store, contextOf(view)(services.now()), id, (now) => ({
          type: 'reject',
          reason,
          now,
        }));
        const back = state.lead_id ? `lead=${state.lead_id}` : `application=${state.application_id}`;
        return reply.redirect(`${base(view)}?${back}&done=rejected`, 303);
      } catch (error) {
        if (!isCommandError(error)) throw error;
        const refused = refusalErrors(error, { reason: 'reason' });
        return sendPage(reply, await documentPage(services, view, id, refused.errors), refused.status);
      }
    },
  );

  app.get(
    '/w/:slug/documents/:id/content',
    { schema: { params: IdParams }, config: { console: { operation: 'documents.view' } } },
    async (request, reply) => {
      const view = viewOf(request);
      const document = await findDocument(services.pool, view.workspace.id, false, request.params.id);
      if (!document) throw new ConsoleRefusal(404, 'There is no such document in this workspace.');
      if (document.status !== 'available' && document.status !== 'rejected')
        throw new ConsoleRefusal(409, VERDICT[document.status] + '.');
      const file = await storage.open(document.id);
      if (!file) throw new ConsoleRefusal(404, 'The file of this document is missing.');
      return reply
        .header('content-type', document.content_type)
        .header('content-length', String(file.size))
        .header('content-disposition', contentDisposition(document.filename || 'document'))
        .send(file.stream);
    },
  );
}
