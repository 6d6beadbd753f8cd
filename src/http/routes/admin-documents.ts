import multipart, { type MultipartFile } from '@fastify/multipart';
import { isUnreadableMultipart } from '../../documents/unreadable-multipart.js';
import contentDisposition from 'content-disposition';
import { Type } from 'typebox';
import type { FastifyRequest } from 'fastify';
import {
  handleDocumentCommand,
  receiveUpload,
  recordUpload,
  type IncomingUpload,
} from '../../commands/documents/document-commands.js';
import { subjectOf } from '../../commands/subject.js';
import { DOCUMENT_CONTENT_TYPES, documentTypesOf, MAX_DOCUMENT_BYTES } from '../../domain/documents/index.js';
import { findDocument, listDocuments } from '../../projections/documents.js';
import { ModeQuery } from '../../schemas/application.js';
import type { AppServices } from '../../bootstrap.js';
import { staffScope } from '../admin-auth.js';
import { printable } from '../edge-values.js';
import { ApiError, notFound } from '../errors.js';
import { adminErrorResponses, AdminWorkspaceParams } from '../schemas/admin.js';
import {
  Document,
  DocumentList,
  DocumentListQuery,
  DocumentParams,
  RejectDocumentBody,
  UploadDocumentBody,
} from '../schemas/document.js';
import { answer } from '../schemas/error.js';
import type { TypedApp } from '../typed-app.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The file of a document upload, streamed into the incoming area before the form is validated. */
    documentUpload: { upload: IncomingUpload; filename: string; mimetype: string; recorded: boolean } | null;
  }
}

/** Under the admin interface's prefix (/admin/v1, src/http/routes/admin.ts). */
const BASE = '/workspaces/:workspace/documents';
const ERRORS = adminErrorResponses(400, 401, 403, 404);
const TAGS = ['documents'];

/** The multipart parser's refusals, in the Error shape. */
function multipartRefusal(error: unknown): ApiError | undefined {
  switch ((error as { code?: string }).code) {
    case 'FST_REQ_FILE_TOO_LARGE':
      return new ApiError(413, 'document_too_large', `A document is at most ${MAX_DOCUMENT_BYTES} bytes`);
    case 'FST_FILES_LIMIT':
      return new ApiError(400, 'validation_failed', 'Send one file, in the field file', {
        fields: { file: 'one file part only: this form had a second one' },
      });
    case 'FST_FIELDS_LIMIT':
    case 'FST_PARTS_LIMIT':
    case 'FST_PROTO_VIOLATION':
    case 'FST_INVALID_MULTIPART_CONTENT_TYPE':
      return new ApiError(
        400,
        'validation_failed',
        'Send one file in the field file, with the fields type and lead_id or application_id',
        { fields: { file: 'one file, and the form fields type and lead_id or application_id' } },
      );
    default:
      return undefined;
  }
}

/**
 * The workspace UI's operations on documents, for staff: upload (multipart, scanned by ClamAV before it is accepted),
 * list, read, download and reject. Live data unless `?sandbox=true`.
 */
export function registerAdminDocumentRoutes(app: TypedApp, services: AppServices): void {
  registerUploadDocument(app, services);
  registerListDocuments(app, services);
  registerGetDocument(app, services);
  registerDownloadDocument(app, services);
  registerRejectDocument(app, services);
}

function staff(services: AppServices, request: FastifyRequest, sandbox: boolean | undefined) {
  return staffScope(request, sandbox, services.now());
}

/** POST …/documents, in its own scope with the multipart parser. */
function registerUploadDocument(app: TypedApp, services: AppServices): void {
  void app.register(async (scope: TypedApp) => {
    await registerUploadParser(scope, services);
    registerUploadRoute(scope, services);
  });
}

/**
 * The form's file is streamed to the incoming area as it arrives (never held in memory); the other fields become
 * the body the schema validates. A file whose form is then refused is deleted before the answer is sent.
 */
async function registerUploadParser(scope: TypedApp, services: AppServices): Promise<void> {
  const { storage } = services.documents;
  scope.decorateRequest('documentUpload', null);
  await scope.register(multipart, {
    attachFieldsToBody: 'keyValues',
    limits: { fileSize: MAX_DOCUMENT_BYTES + 1, files: 1, fields: 8, fieldSize: 1024, parts: 9, headerPairs: 50 },
    async onFile(this: FastifyRequest, part: MultipartFile) {
      if (part.fieldname !== 'file') {
        part.file.resume();
        throw new ApiError(400, 'validation_failed', 'Send one file, in the field file', {
          fields: { [printable(part.fieldname)]: 'is a file part; only the field file takes one' },
        });
      }
      try {
        const upload = await receiveUpload(storage, services.now(), part.file);
        if (part.file.truncated) {
          await storage.discard(upload.id);
          throw multipartRefusal({ code: 'FST_REQ_FILE_TOO_LARGE' });
        }
        this.documentUpload = { upload, filename: part.filename, mimetype: part.mimetype, recorded: false };
        (part as unknown as { value: string }).value = upload.id;
      } catch (error) {
        throw multipartRefusal(error) ?? error;
      }
    },
  });
  // Before the answer is written, so a client that reads a refusal finds the file already gone.
  scope.addHook('onSend', async (request) => {
    const pending = request.documentUpload;
    if (pending && !pending.recorded) await storage.discard(pending.upload.id);
  });
  // A body the parser cannot read, or past its limits (a second file part), reaches no hook of ours: answered here as
  // the sender's, then by the app's handler.
  scope.setErrorHandler((error) => {
    const refusal = multipartRefusal(error);
    if (refusal) throw refusal;
    if (!isUnreadableMultipart(error)) throw error;
    throw new ApiError(400, 'invalid_request', 'The multipart body could not be read: check its boundary and its end');
  });
}

/** POST …/documents: records the streamed file as a document of the lead or application. */
function registerUploadRoute(scope: TypedApp, services: AppServices): void {
  scope.post(
    BASE,
    {
      schema: {
        tags: TAGS,
        operationId: 'uploadDocument',
        summary:
          'Upload a document for a lead or an application (multipart): scanned for viruses before it is accepted',
        description:
          'The file is scanned by ClamAV before anything is accepted. Clean: 201 with the document `available` ' +
          'and document.uploaded sent. Scanner unreachable: 202 with the document `pending_scan`; it is scanned ' +
          'when the scanner is back (never accepted unscanned). Infected: 422 `document_infected`, the file ' +
          'deleted and the attempt recorded, nothing sent.',
        consumes: ['multipart/form-data'],
        params: AdminWorkspaceParams,
        querystring: ModeQuery,
        body: UploadDocumentBody,
        response: {
          201: answer(Document, 'Scanned clean and accepted: document.uploaded is sent'),
          202: answer(Document, 'Received; waiting for the virus scanner (status pending_scan)'),
          ...adminErrorResponses(400, 401, 403, 404, 413, 415, 422),
        },
      },
    },
    async (request, reply) => {
      const { workspace, context } = staff(services, request, request.query.sandbox);
      const pending = request.documentUpload;
      if (!pending) throw new ApiError(400, 'validation_failed', 'Send the file', { fields: { file: 'a file' } });
      const { body } = request;
      pending.recorded = true;
      try {
        const document = await recordUpload(
          services.store,
          services.documents,
          context,
          documentTypesOf(workspace.settings),
          pending.upload,
          {
            subject: subjectOf({ lead_id: body.lead_id, application_id: body.application_id }),
            document_type: body.type,
            filename: pending.filename,
            declared_content_type: pending.mimetype === 'application/octet-stream' ? null : pending.mimetype,
          },
        );
        return reply.status(document.status === 'available' ? 201 : 202).send(document);
      } catch (error) {
        // recordUpload deleted the file unless the refusal happened before it ran (subjectOf).
        pending.recorded = false;
        throw error;
      }
    },
  );
}

/** GET …/documents */
function registerListDocuments(app: TypedApp, services: AppServices): void {
  app.get(
    BASE,
    {
      schema: {
        tags: TAGS,
        operationId: 'listDocuments',
        summary: 'List the documents of a lead or an application (or all), oldest first',
        params: AdminWorkspaceParams,
        querystring: DocumentListQuery,
        response: { 200: answer(DocumentList, 'The documents'), ...ERRORS },
      },
    },
    async (request) => {
      const { workspace, sandbox } = staff(services, request, request.query.sandbox);
      const { lead_id, application_id } = request.query;
      return { data: await listDocuments(services.pool, workspace.id, sandbox, { lead_id, application_id }) };
    },
  );
}

/** GET …/documents/{id} */
function registerGetDocument(app: TypedApp, services: AppServices): void {
  app.get(
    `${BASE}/:id`,
    {
      schema: {
        tags: TAGS,
        operationId: 'getDocument',
        summary: 'Read a document',
        params: DocumentParams,
        querystring: ModeQuery,
        response: { 200: answer(Document, 'The document'), ...ERRORS },
      },
    },
    async (request) => {
      const { workspace, sandbox } = staff(services, request, request.query.sandbox);
      const document = await findDocument(services.pool, workspace.id, sandbox, request.params.id);
      if (!document) throw notFound('document');
      return document;
    },
  );
}

/** GET …/documents/{id}/content */
function registerDownloadDocument(app: TypedApp, services: AppServices): void {
  app.get(
    `${BASE}/:id/content`,
    {
      schema: {
        tags: TAGS,
        operationId: 'downloadDocument',
        summary: "Download a document's file, with its SHA-256 in Repr-Digest (RFC 9530) and ETag",
        description:
          'Available and rejected documents only: one waiting for its scan or refused by it answers 409 ' +
          '`document_not_available`.',
        params: DocumentParams,
        querystring: ModeQuery,
        response: {
          // The file's own type for the file; refusals stay JSON (a `produces` list would say they were files too).
          200: {
            description: 'The file, streamed',
            content: Object.fromEntries(
              DOCUMENT_CONTENT_TYPES.map((type) => [type, { schema: Type.String({ format: 'binary' }) }]),
            ),
          },
          ...adminErrorResponses(400, 401, 403, 404, 409),
        },
      },
    },
    async (request, reply) => {
      const { workspace, sandbox } = staff(services, request, request.query.sandbox);
      const document = await findDocument(services.pool, workspace.id, sandbox, request.params.id);
      if (!document) throw notFound('document');
      if (document.status !== 'available' && document.status !== 'rejected')
        throw new ApiError(
          409,
          'document_not_available',
          document.status === 'pending_scan'
            ? 'The document is still waiting for its virus scan'
            : 'The document was refused by the virus scan and not kept',
        );
      const file = await services.documents.storage.open(document.id);
      if (!file) throw new Error(`The stored file of document ${document.id} is missing`);
      const digest = Buffer.from(document.checksum_sha256, 'hex').toString('base64');
      return (
        reply
          .header('content-type', document.content_type)
          .header('content-length', String(file.size))
          .header('repr-digest', `sha-256=:${digest}:`)
          .header('etag', `"${document.checksum_sha256}"`)
          .header('content-disposition', contentDisposition(document.filename))
          .header('cache-control', 'private, no-store')
          // fastify sends a stream as it is (no serializer runs); the schema's string/binary only documents the body.
          .send(file.stream as unknown as string)
      );
    },
  );
}

/** POST …/documents/{id}/reject */
function registerRejectDocument(app: TypedApp, services: AppServices): void {
  app.post(
    `${BASE}/:id/reject`,
    {
      schema: {
        tags: TAGS,
        operationId: 'rejectDocument',
        summary: 'Reject an available document with a reason: document.rejected',
        params: DocumentParams,
        querystring: ModeQuery,
        body: RejectDocumentBody,
        response: {
          200: answer(Document, 'The document as rejected'),
          ...adminErrorResponses(400, 401, 403, 404, 409),
        },
      },
    },
    async (request) => {
      const { context } = staff(services, request, request.query.sandbox);
      const { state } = await handleDocumentCommand(services.store, context, request.params.id, (now) => ({
        type: 'reject',
        reason: request.body.reason,
        now,
      }));
      return state;
    },
  );
}
