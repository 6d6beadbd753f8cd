import type pg from 'pg';
import type { Logger } from 'pino';
import type { DocumentServices } from '../commands/documents/document-commands.js';
import { scanPendingDocuments } from '../commands/documents/scan-pending.js';
import type { EventStore } from '../events/event-store.js';
import { PollingRunner } from './polling-runner.js';

export interface DocumentScanServices {
  pool: pg.Pool;
  store: EventStore;
  documents: DocumentServices;
  now: () => Date;
}

/**
 * Scans the documents that arrived while the virus scanner was unreachable, as soon as it answers again: on start
 * and every tick (5 s unless set), batch after batch. Any number of processes may run one (decide records one verdict
 * per document). A document is never accepted unscanned: while clamd is down, it simply stays pending. One that clamd
 * answers with an error is passed over, and set aside after SCAN_ATTEMPTS such answers (scanPendingDocuments).
 */
export class DocumentScanRunner extends PollingRunner {
  private readonly warnedMissing = new Set<string>();
  /** Failed scans per pending document (clamd answered with an error), kept between passes until one is set aside. */
  private readonly scanFailures = new Map<string, number>();

  private readonly services: DocumentScanServices;
  private readonly log: Pick<Logger, 'error' | 'warn'>;
  private readonly options: { pollIntervalMs?: number; batchSize?: number };
  constructor(
    services: DocumentScanServices,
    log: Pick<Logger, 'error' | 'warn'>,
    options: { pollIntervalMs?: number; batchSize?: number } = {},
  ) {
    super(options.pollIntervalMs ?? 5000, (error) => log.error({ err: error }, 'document scans failed'));
    this.services = services;
    this.log = log;
    this.options = options;
  }

  protected async catchUp(): Promise<void> {
    const batchSize = this.options.batchSize ?? 20;
    while (this.running) {
      const { pool, store, documents, now } = this.services;
      const pass = await scanPendingDocuments(pool, store, documents, now, batchSize, this.scanFailures);
      for (const id of pass.missing)
        if (!this.warnedMissing.has(id)) {
          this.warnedMissing.add(id);
          this.log.warn({ document_id: id }, 'a document waits for its scan but its file is not in this process');
        }
      for (const id of pass.setAside)
        this.log.warn(
          { document_id: id },
          'a document was set aside: the virus scanner answered every try with an error',
        );
      if (pass.unavailable) return;
      // A batch of documents clamd keeps failing on is tried again at once, so they are set aside within a tick
      // and the documents behind them are reached.
      if (pass.pending < batchSize || (pass.recorded === 0 && pass.failed === 0)) return;
    }
  }
}
