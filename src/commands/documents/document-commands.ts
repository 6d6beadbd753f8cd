import type { Readable } from 'node:stream';
import {
  checkUpload,
  decide,
  DocumentRefusal,
  evolve,
  fold,
  MAX_DOCUMENT_BYTES,
  decideReceive,
  type Document,
  type DocumentCommand,
  type DocumentEvent,
  type DocumentSubject,
  type DocumentTypeDef,
  type ScanResult,
} from '../../domain/documents/index.js';
import { ScannerUnavailableError, type VirusScanner } from '../../documents/clamd.js';
import { receiveFile, type ReceivedFile } from '../../documents/receive-file.js';
import type { DocumentStorage } from '../../documents/storage.js';
import type { EventStore } from '../../events/event-store.js';
import type { CommandContext } from '../../events/types.js';
import { documentStream, toDocumentEvent } from '../../domain/documents/index.js';
import { commandHandler } from '../command-handler.js';
import { newId } from '../../shared/ids.js';
import { runCommand } from '../run-command.js';
import { personOfSubject } from '../person-locks.js';

/** The file store and the virus scanner documents go through. */
export interface DocumentServices {
  storage: DocumentStorage;
  scanner: VirusScanner;
}

/** An upload streamed into the incoming area, not yet checked, scanned or recorded. */
export interface IncomingUpload {
  id: string;
  file: ReceivedFile;
}

/**
 * Streams an upload's bytes into the incoming area under a new document id. `maxBytes` is the limit of the upload's
 * document type when it is known by then, the largest any type may have otherwise; the domain refuses what is over.
 */
export async function receiveUpload(
  storage: DocumentStorage,
  now: Date,
  source: Readable,
  maxBytes = MAX_DOCUMENT_BYTES,
): Promise<IncomingUpload> {
  const id = newId(now.getTime());
  try {
    return { id, file: await receiveFile(storage, id, source, maxBytes) };
  } catch (error) {
    await storage.discard(id);
    throw error;
  }
}

export interface UploadDetails {
  subject: DocumentSubject;
  document_type: string;
  filename: string;
  declared_content_type: string | null;
}

/** The scanner's verdict, or null when it could not give one (the document then waits for the scan runner). */
async function scanIncoming(documents: DocumentServices, id: string): Promise<ScanResult | null> {
  const path = await documents.storage.incomingPath(id);
  if (path === null) throw new Error(`The incoming file of document ${id} is gone`);
  try {
    return await documents.scanner.scan(path);
  } catch (error) {
    if (error instanceof ScannerUnavailableError) return null;
    throw error;
  }
}

/**
 * Checks, scans and records an incoming upload. Clean: the file is moved to storage before the events commit (a
 * crash between leaves an unreferenced file, never an event without its file) and document.uploaded is appended.
 * Scanner unreachable: document.received alone, the file waits in the incoming area for the scan runner. Infected:
 * document.received and document.infected are recorded, the file deleted, and the upload refused.
 */
export async function recordUpload(
  store: EventStore,
  documents: DocumentServices,
  context: CommandContext,
  types: readonly DocumentTypeDef[],
  upload: IncomingUpload,
  details: UploadDetails,
): Promise<Document> {
  const { id, file } = upload;
  let stored = false;
  try {
    const facts = {
      document_id: id,
      subject: details.subject,
      types,
      document_type: details.document_type,
      filename: details.filename,
      declared_content_type: details.declared_content_type,
      detected_content_type: file.detected_content_type,
      size: file.size,
      checksum_sha256: file.checksum_sha256,
      now: context.now,
    };
    // Refused files are never scanned: the checks run first, and again (pure) when the event is made.
    checkUpload(facts);
    const result = await scanIncoming(documents, id);
    if (result?.kind === 'clean') stored = await documents.storage.accept(id);
    const stream = documentStream(id);
    const document = await runCommand(store, context, [stream], async (tx) => {
      const person = await personOfSubject(tx, details.subject);
      const events: DocumentEvent[] = decideReceive({ ...facts, person_id: person });
      const state = fold(events)!;
      if (result) events.push(...decide(state, { type: 'record_scan', result, now: tx.context.now }));
      await tx.append(stream, 'no_stream', events);
      return fold(events)!;
    });
    if (document.status === 'infected') {
      await documents.storage.discard(id);
      throw new DocumentRefusal(
        'unprocessable',
        'document_infected',
        `The virus scan found ${document.scan_signature}; the file was refused and deleted (recorded as document ${id})`,
      );
    }
    return document;
  } catch (error) {
    if (!(error instanceof DocumentRefusal && error.code === 'document_infected')) {
      await documents.storage.discard(id);
      if (stored) await documents.storage.remove(id);
    }
    throw error;
  }
}

const documents = commandHandler<Document, DocumentEvent, DocumentCommand>({
  name: 'document',
  stream: documentStream,
  read: toDocumentEvent,
  evolve,
  decide,
});

/** Reads and folds a document's stream inside the transaction; not found when unknown, another tenant's or mode's. */
export const loadDocument = documents.load;

/** Runs one command on a document (a scan's result, setting it aside, a rejection): load, decide, append. */
export const handleDocumentCommand = documents.handle;
