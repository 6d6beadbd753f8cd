import { Type, type Static } from 'typebox';
import { DOCUMENT_CONTENT_TYPES, DOCUMENT_STATUSES, FILENAME_MAX, REASON_MAX } from '../../domain/documents/index.js';
import { StringEnum } from '../../shared/enums.js';
import { WorkspaceRef } from '../../schemas/workspace-ref.js';
import { EXACTLY_ONE_SUBJECT } from './subject.js';

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) => Type.Union([schema, Type.Null()]);
const Uuid = Type.String({ format: 'uuid' });
const DateTime = Type.String({ format: 'date-time' });

/** The public Document: the admin interface's answer and the `data` of document.uploaded and document.rejected. */
export const Document = Type.Object(
  {
    id: Uuid,
    lead_id: Nullable(Uuid),
    application_id: Nullable(Uuid),
    type: Type.String({ description: "a document type of the workspace's definition (passport, transcript, …)" }),
    filename: Type.String({
      minLength: 0,
      maxLength: FILENAME_MAX,
      description: 'the name the file was uploaded under; empty once its person is erased',
    }),
    content_type: StringEnum(DOCUMENT_CONTENT_TYPES),
    size: Type.Integer({ minimum: 1, description: 'bytes' }),
    checksum_sha256: Type.String({ pattern: '^[0-9a-f]{64}$', description: "hex SHA-256 of the file's bytes" }),
    status: StringEnum(DOCUMENT_STATUSES, {
      description:
        'pending_scan: waiting for the virus scan (never downloadable, never announced); available: passed it ' +
        '(document.uploaded); rejected: rejected by staff (document.rejected); infected: refused by the scan, the ' +
        'file deleted; scan_failed: the scanner answered every try with an error about this file (past its size ' +
        'limit, say): set aside, never accepted, the file deleted (see scan_error)',
    }),
    scan_signature: Nullable(Type.String({ description: 'what the scan found (infected)' })),
    scanned_at: Nullable(DateTime),
    // Optional: documents announced before scan errors were recorded (`document.scan_failed`) went out without it.
    scan_error: Type.Optional(
      Nullable(Type.String({ description: 'why the scanner gave no verdict (scan_failed); null otherwise' })),
    ),
    rejection_reason: Nullable(Type.String({ description: 'empty once its person is erased' })),
    rejected_at: Nullable(DateTime),
    created_at: DateTime,
    updated_at: DateTime,
  },
  {
    additionalProperties: false,
    description: 'A document staff uploaded for a lead or an application (exactly one of lead_id and application_id)',
  },
);

/** The upload form (multipart/form-data). `file` carries the bytes; the service fills it with the upload's id. */
export const UploadDocumentBody = Type.Object(
  {
    lead_id: Type.Optional(Uuid),
    application_id: Type.Optional(Uuid),
    type: Type.String({ minLength: 1, maxLength: 60, description: 'a document type of the workspace' }),
    file: Type.String({
      format: 'binary',
      description: "the file (PDF, JPEG or PNG, as its type allows); its part's filename is kept",
    }),
  },
  {
    additionalProperties: false,
    ...EXACTLY_ONE_SUBJECT,
    description: 'Exactly one of lead_id and application_id; the file part last or not',
  },
);
export type UploadDocumentBody = Static<typeof UploadDocumentBody>;

export const RejectDocumentBody = Type.Object(
  { reason: Type.String({ minLength: 1, maxLength: REASON_MAX }) },
  { additionalProperties: false },
);

export const DocumentParams = Type.Object({ workspace: WorkspaceRef, id: Uuid }, { additionalProperties: false });
export const DocumentListQuery = Type.Object(
  {
    lead_id: Type.Optional(Uuid),
    application_id: Type.Optional(Uuid),
    sandbox: Type.Optional(Type.Boolean({ description: 'sandbox (test-mode) data; live by default' })),
  },
  { additionalProperties: false },
);
export const DocumentList = Type.Object(
  { data: Type.Array(Document) },
  { additionalProperties: false, description: 'Oldest first, at most 500' },
);
