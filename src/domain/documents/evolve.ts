import type { Document, DocumentEvent } from './types.js';
import type { WithoutPayload } from '../facts.js';

/** An event's facts, what the state is built from (the payloads of the webhook events are ignored). */
export type DocumentFact = WithoutPayload<DocumentEvent>;

/** Folds one event into the document. The state is the public Document: nothing is kept that it does not show. */
export function evolve(state: Document | undefined, event: DocumentFact): Document {
  if (event.type === 'document.received') {
    const d = event.data;
    return {
      id: d.document_id,
      lead_id: d.lead_id,
      application_id: d.application_id,
      type: d.document_type,
      filename: d.filename,
      content_type: d.content_type,
      size: d.size,
      checksum_sha256: d.checksum_sha256,
      status: 'pending_scan',
      scan_signature: null,
      scanned_at: null,
      scan_error: null,
      rejection_reason: null,
      rejected_at: null,
      created_at: d.received_at,
      updated_at: d.received_at,
    };
  }
  if (!state) throw new Error(`${event.type} before document.received`);
  switch (event.type) {
    case 'document.uploaded':
      return { ...state, status: 'available', scanned_at: event.data.scanned_at, updated_at: event.data.scanned_at };
    case 'document.infected':
      return {
        ...state,
        status: 'infected',
        scan_signature: event.data.signature,
        scanned_at: event.data.scanned_at,
        updated_at: event.data.scanned_at,
      };
    case 'document.scan_failed':
      return {
        ...state,
        status: 'scan_failed',
        scan_error: event.data.reason,
        scanned_at: event.data.failed_at,
        updated_at: event.data.failed_at,
      };
    case 'document.rejected':
      return {
        ...state,
        status: 'rejected',
        rejection_reason: event.data.reason,
        rejected_at: event.data.rejected_at,
        updated_at: event.data.rejected_at,
      };
    default: {
      const unknown: never = event;
      throw new Error(`unknown document event ${JSON.stringify(unknown)}`);
    }
  }
}

export function fold(events: readonly DocumentFact[]): Document | undefined {
  return events.reduce<Document | undefined>((state, event) => evolve(state, event), undefined);
}
