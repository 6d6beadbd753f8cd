import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { ScannerUnavailableError } from '../../documents/clamd.js';
import { isMissingFile } from '../../documents/storage.js';
import type { EventStore } from '../../events/event-store.js';
import { pendingScans } from '../../projections/documents.js';
import { operateDocument, type DocumentServices } from './document-commands.js';

export const VIRUS_SCAN_ACTOR = { type: 'system', name: 'virus scan' } as const;

export interface ScanPass {
  /** Pending documents looked at. */
  pending: number;
  /** Verdicts recorded (document.uploaded or document.infected). */
  recorded: number;
  /** Pending documents whose incoming file this process cannot see (another host's disk, or lost). */
  missing: string[];
  /** The scanner could not be reached: the pass stopped, the rest waits for the next one. */
  unavailable: boolean;
}

/**
 * Scans documents received while the scanner was unreachable, oldest first, and records each verdict. A clean file is
 * moved to storage before its event commits; decide records a verdict only while the document is pending, so two
 * processes scanning the same document append one. Stops at the first unreachable scan.
 */
export async function scanPendingDocuments(
  pool: pg.Pool,
  store: EventStore,
  documents: DocumentServices,
  now: () => Date,
  limit = 20,
): Promise<ScanPass> {
  const rows = await pendingScans(pool, limit);
  const pass: ScanPass = { pending: rows.length, recorded: 0, missing: [], unavailable: false };
  for (const row of rows) {
    const path = await documents.storage.incomingPath(row.id);
    if (path === null) {
      pass.missing.push(row.id);
      continue;
    }
    let result;
    try {
      result = await documents.scanner.scan(path);
    } catch (error) {
      // Gone since it was listed: another process's pass accepted or discarded it and records its verdict.
      if (isMissingFile(error)) continue;
      if (!(error instanceof ScannerUnavailableError)) throw error;
      pass.unavailable = true;
      return pass;
    }
    if (result.kind === 'clean') await documents.storage.accept(row.id);
    const context = {
      tenantId: row.tenant_id,
      sandbox: row.sandbox,
      metadata: { actor: VIRUS_SCAN_ACTOR, correlation_id: randomUUID() },
      now: now(),
    };
    const { events } = await operateDocument(store, context, row.id, (at) => ({
      type: 'record_scan',
      result,
      now: at,
    }));
    if (result.kind === 'infected') await documents.storage.discard(row.id);
    pass.recorded += events.length;
  }
  return pass;
}
