import { evolve } from './evolve.js';
import {
  DocumentRefusal,
  type Document,
  type DocumentCommand,
  type DocumentContentType,
  type DocumentEvent,
  type DocumentSubject,
  type DocumentTypeDef,
} from './types.js';

export const FILENAME_MAX = 255;
export const REASON_MAX = 1000;

export interface ReceiveDocumentInput {
  document_id: string;
  subject: DocumentSubject;
  /** The workspace's document types. */
  types: readonly DocumentTypeDef[];
  document_type: string;
  filename: string;
  /** The content type the uploader declared; null when it declared none (the file's bytes decide then). */
  declared_content_type: string | null;
  /** The content type the file's first bytes show; null when they show none the service accepts. */
  detected_content_type: DocumentContentType | null;
  size: number;
  checksum_sha256: string;
  now: Date;
}

/** The name a file is kept under: its last path segment, without control characters, 1 to 255 characters. */
export function cleanFilename(name: string): string {
  // eslint-disable-next-line no-control-regex -- control characters are what is removed
  const base = (name.split(/[\\/]/).pop() ?? '').replace(/[\u0000-\u001f\u007f]/g, '').trim();
  if (base.length === 0 || base === '.' || base === '..')
    throw new DocumentRefusal('invalid', 'validation_failed', 'The file needs a name', {
      file: 'a file with a name',
    });
  return [...base].slice(0, FILENAME_MAX).join('');
}

function documentType(types: readonly DocumentTypeDef[], key: string): DocumentTypeDef {
  const found = types.find((t) => t.key === key);
  if (!found)
    throw new DocumentRefusal('invalid', 'validation_failed', `No document type ${key} in this workspace`, {
      type: `one of ${types.map((t) => t.key).join(', ')}`,
    });
  return found;
}

/** What an upload's checks keep: the document type, the file's name and its content type. */
export interface CheckedUpload {
  type: DocumentTypeDef;
  filename: string;
  content_type: DocumentContentType;
}

/**
 * Checks a received file's type, size and content type. The content type is the one the bytes show; a declared one
 * that differs is refused, as is one the document type does not allow.
 */
export function checkUpload(input: ReceiveDocumentInput): CheckedUpload {
  const type = documentType(input.types, input.document_type);
  const filename = cleanFilename(input.filename);
  if (input.size === 0)
    throw new DocumentRefusal('invalid', 'validation_failed', 'The file is empty', { file: 'a non-empty file' });
  if (input.size > type.max_size_bytes)
    throw new DocumentRefusal(
      'too_large',
      'document_too_large',
      `A ${type.key} document is at most ${type.max_size_bytes} bytes; this file has ${input.size}`,
    );
  const detected = input.detected_content_type;
  const declared = input.declared_content_type?.split(';')[0]!.trim().toLowerCase() || null;
  if (detected === null || !type.content_types.includes(detected) || (declared !== null && declared !== detected))
    throw new DocumentRefusal(
      'unsupported',
      'unsupported_content_type',
      `A ${type.key} document is ${type.content_types.join(', ')}; ${
        detected === null
          ? "this file's bytes are none of them"
          : declared !== null && declared !== detected
            ? `this file was declared ${declared} but its bytes are ${detected}`
            : `this file is ${detected}`
      }`,
    );
  return { type, filename, content_type: detected };
}

/** The event that records a received file, once checkUpload passed it; `person_id` is the lead of its person. */
export function decideReceive(input: ReceiveDocumentInput & { person_id: string }): DocumentEvent[] {
  const { type, filename, content_type } = checkUpload(input);
  return [
    {
      type: 'document.received',
      data: {
        document_id: input.document_id,
        lead_id: input.subject.lead_id,
        application_id: input.subject.application_id,
        document_type: type.key,
        filename,
        content_type,
        size: input.size,
        checksum_sha256: input.checksum_sha256,
        received_at: input.now.toISOString(),
        person_id: input.person_id,
      },
    },
  ];
}

function checkedReason(reason: string): string {
  const trimmed = reason.trim();
  if (trimmed.length === 0 || trimmed.length > REASON_MAX)
    throw new DocumentRefusal('invalid', 'validation_failed', `A reason is 1 to ${REASON_MAX} characters`, {
      reason: `1 to ${REASON_MAX} characters`,
    });
  return trimmed;
}

/**
 * What a command on a document appends. A scan result is recorded only while the document waits for one, so two
 * scanners finishing the same document append one verdict; a document the scanner could not scan is set aside only
 * while it waits, too. Only an available document can be rejected; rejecting a
 * rejected one again appends nothing.
 */
export function decide(state: Document, command: DocumentCommand): DocumentEvent[] {
  switch (command.type) {
    case 'record_scan': {
      if (state.status !== 'pending_scan') return [];
      const scanned_at = command.now.toISOString();
      if (command.result.kind === 'infected')
        return [{ type: 'document.infected', data: { scanned_at, signature: command.result.signature } }];
      const after = evolve(state, { type: 'document.uploaded', data: { scanned_at } });
      return [{ type: 'document.uploaded', data: { scanned_at, payload: after } }];
    }
    case 'set_aside': {
      if (state.status !== 'pending_scan') return [];
      const data = { failed_at: command.now.toISOString(), reason: command.reason, attempts: command.attempts };
      return [{ type: 'document.scan_failed', data }];
    }
    case 'reject': {
      const reason = checkedReason(command.reason);
      if (state.status === 'rejected') return [];
      if (state.status !== 'available')
        throw new DocumentRefusal(
          'conflict',
          'document_not_available',
          state.status === 'pending_scan'
            ? 'The document is still waiting for its virus scan'
            : state.status === 'scan_failed'
              ? 'The virus scanner could not scan the document; it was set aside'
              : 'The document was refused by the virus scan',
        );
      const facts = { reason, rejected_at: command.now.toISOString() };
      const after = evolve(state, { type: 'document.rejected', data: facts });
      return [{ type: 'document.rejected', data: { ...facts, payload: after } }];
    }
    default: {
      const unknown: never = command;
      throw new Error(`unknown document command ${JSON.stringify(unknown)}`);
    }
  }
}
