import { eventReader, eventTypes } from '../event-types.js';
import { Refusal } from '../refusal.js';

/** The document aggregate: a file staff upload for a lead or an application, scanned before it is accepted. */

/** The content types a document may have; each is recognised by the file's first bytes, not by its name. */
export const DOCUMENT_CONTENT_TYPES = ['application/pdf', 'image/jpeg', 'image/png'] as const;
export type DocumentContentType = (typeof DOCUMENT_CONTENT_TYPES)[number];

/**
 * `pending_scan`: received, the scanner could not be reached yet (never downloadable, never announced);
 * `available`: passed the scan (document.uploaded); `rejected`: rejected by staff (document.rejected);
 * `infected`: the scan found a signature: refused, the file deleted, recorded only; `scan_failed`: the scanner
 * answered every try with an error about this file (document.scan_failed): set aside, never accepted, the file deleted.
 */
export const DOCUMENT_STATUSES = ['pending_scan', 'available', 'rejected', 'infected', 'scan_failed'] as const;
export type DocumentStatus = (typeof DOCUMENT_STATUSES)[number];

/** A document type of the workspace (passport, transcript, offer letter, …) and its limits. */
export interface DocumentTypeDef {
  key: string;
  name: string;
  /** Largest file accepted, bytes. */
  max_size_bytes: number;
  content_types: DocumentContentType[];
}

export type DocumentSubject = { lead_id: string; application_id: null } | { lead_id: null; application_id: string };

/** The public Document: the admin interface's answer and the `data` of document.uploaded and document.rejected. */
export interface Document {
  id: string;
  lead_id: string | null;
  application_id: string | null;
  type: string;
  filename: string;
  content_type: DocumentContentType;
  size: number;
  /** Hex SHA-256 of the file's bytes. */
  checksum_sha256: string;
  status: DocumentStatus;
  /** The signature the scanner found (status infected); null otherwise. */
  scan_signature: string | null;
  scanned_at: string | null;
  /** Why the scanner gave no verdict (status scan_failed); null otherwise. */
  scan_error: string | null;
  rejection_reason: string | null;
  rejected_at: string | null;
  created_at: string;
  updated_at: string;
}

/** Internal: the file arrived (checked for type, size and content type) and waits for its scan. */
export interface DocumentReceived {
  type: 'document.received';
  data: {
    document_id: string;
    lead_id: string | null;
    application_id: string | null;
    document_type: string;
    filename: string;
    content_type: DocumentContentType;
    size: number;
    checksum_sha256: string;
    received_at: string;
    /**
     * The lead whose person the document belongs to (an application's lead for an application's document): the
     * stream's data key is filed under them, so erasing the person erases the document's personal values too.
     */
    person_id: string;
  };
}
/** The webhook event: the scan passed; `payload` is the Document as available. */
export interface DocumentUploaded {
  type: 'document.uploaded';
  data: { scanned_at: string; payload: Document };
}
/** Internal: the scan found a signature; the file was never stored. */
export interface DocumentInfected {
  type: 'document.infected';
  data: { scanned_at: string; signature: string };
}
/** Internal: the scanner answered `attempts` tries with an error about this file; it is set aside, never accepted. */
export interface DocumentScanFailed {
  type: 'document.scan_failed';
  data: { failed_at: string; reason: string; attempts: number };
}
/** The webhook event: staff rejected the document; `payload` is the Document as rejected. */
export interface DocumentRejected {
  type: 'document.rejected';
  data: { reason: string; rejected_at: string; payload: Document };
}

export type DocumentEvent =
  DocumentReceived | DocumentUploaded | DocumentInfected | DocumentScanFailed | DocumentRejected;

/** Every type of DocumentEvent, once: the compiler names a type missing here (src/domain/event-types.ts). */
export const DOCUMENT_EVENT_TYPES = eventTypes<DocumentEvent>({
  'document.received': 'document.received',
  'document.uploaded': 'document.uploaded',
  'document.infected': 'document.infected',
  'document.scan_failed': 'document.scan_failed',
  'document.rejected': 'document.rejected',
});

/** A stored event of a document stream as the domain's event type. */
export const toDocumentEvent = eventReader<DocumentEvent>(DOCUMENT_EVENT_TYPES, 'a document');

/** What a scan found, as the domain sees it. */
export type ScanResult = { kind: 'clean' } | { kind: 'infected'; signature: string };

/** How many tries the scanner may answer with an error about one file before it is set aside. */
export const SCAN_ATTEMPTS = 3;

export type DocumentCommand =
  | { type: 'record_scan'; result: ScanResult; now: Date }
  | { type: 'set_aside'; reason: string; attempts: number; now: Date }
  | { type: 'reject'; reason: string; now: Date };

/** A document operation the document refuses: the status and code the caller sees. */
export class DocumentRefusal extends Refusal {}
