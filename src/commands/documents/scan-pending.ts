import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { SCAN_ATTEMPTS } from '../../domain/documents/index.js';
import { ScanFailedError, ScannerUnavailableError } from '../../documents/clamd.js';
import { isMissingFile } from '../../documents/storage.js';
import type { EventStore } from '../../events/event-store.js';
import type { CommandContext } from '../../events/types.js';
import { pendingScans } from '../../projections/documents.js';
import { handleDocumentCommand, type DocumentServices } from './document-commands.js';

export const VIRUS_SCAN_ACTOR = { type: 'system', name: 'virus scan' } as const;

export interface ScanPass {
  /** Pending documents looked at. */
  pending: number;
  /** Verdicts recorded (document.uploaded or document.infected), and documents set aside (document.scan_failed). */
  recorded: number;
  /** Documents whose scan clamd answered with an error this pass (set aside ones included). */
  failed: number;
  /** Documents set aside this pass (document.scan_failed). */
  setAside: string[];
  /** Pending documents whose incoming file this process cannot see (another host's disk, or lost). */
  missing: string[];
  /** The scanner could not be reached: the pass stopped, the rest waits for the next one. */
  unavailable: boolean;
}

/**
 * Scans documents received while the scanner was unreachable, oldest first, and records each verdict. A clean file is
 * moved to storage before its event commits; decide records a verdict only while the document is pending, so two
 * processes scanning the same document append one. Stops at the first unreachable scan. A document clamd answers
 * with an error (ScanFailedError) is counted in `failures` (by document id) and passed over, so it never holds back
 * the ones behind it; at SCAN_ATTEMPTS failures it is set aside (document.scan_failed) and its file deleted.
 */
export async function scanPendingDocuments(
  pool: pg.Pool,
  store: EventStore,
  documents: DocumentServices,
  now: () => Date,
  limit = 20,
  failures: Map<string, number> = new Map(),
): Promise<ScanPass> {
  const rows = await pendingScans(pool, limit);
  const pass: ScanPass = {
    pending: rows.length,
    recorded: 0,
    failed: 0,
    setAside: [],
    missing: [],
    unavailable: false,
  };
  for (const row of rows) {
    const path = await documents.storage.incomingPath(row.id);
    if (path === null) {
      pass.missing.push(row.id);
      continue;
    }
    const context = () => ({
      tenantId: row.tenant_id,
      sandbox: row.sandbox,
      metadata: { actor: VIRUS_SCAN_ACTOR, correlation_id: randomUUID() },
      now: now(),
    });
    let result;
    try {
      result = await documents.scanner.scan(path);
    } catch (error) {
      // Gone since it was listed: another process's pass accepted or discarded it and records its verdict.
      if (isMissingFile(error)) continue;
      if (error instanceof ScanFailedError) {
        pass.failed += 1;
        if (await countFailure(store, documents, context(), row.id, error.reason, failures)) {
          pass.recorded += 1;
          pass.setAside.push(row.id);
        }
        continue;
      }
      if (!(error instanceof ScannerUnavailableError)) throw error;
      pass.unavailable = true;
      return pass;
    }
    failures.delete(row.id);
    if (result.kind === 'clean') await documents.storage.accept(row.id);
    const { events } = await handleDocumentCommand(store, context(), row.id, (at) => ({
      type: 'record_scan',
      result,
      now: at,
    }));
    if (result.kind === 'infected') await documents.storage.discard(row.id);
    pass.recorded += events.length;
  }
  return pass;
}

/** One more failed scan of a document; at SCAN_ATTEMPTS it is set aside. True when this set it aside. */
async function countFailure(
  store: EventStore,
  documents: DocumentServices,
  context: CommandContext,
  id: string,
  reason: string,
  failures: Map<string, number>,
): Promise<boolean> {
  const attempts = (failures.get(id) ?? 0) + 1;
  if (attempts < SCAN_ATTEMPTS) {
    failures.set(id, attempts);
    return false;
  }
  failures.delete(id);
  const { events } = await handleDocumentCommand(store, context, id, (at) => ({
    type: 'set_aside',
    reason,
    attempts,
    now: at,
  }));
  if (events.length === 0) return false;
  await documents.storage.discard(id);
  return true;
}
