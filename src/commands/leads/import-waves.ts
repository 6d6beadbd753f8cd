import type { AppServices } from '../../bootstrap.js';
import { leadStream } from '../../domain/leads/lead.js';
import type { StoreTransaction } from '../../events/event-store.js';
import type { CommandContext } from '../../events/types.js';
import type { JobItemWork } from '../../jobs/kinds.js';
import { captureLookupIds } from '../../projections/leads-queries.js';
import type { Queryable } from '../../storage/postgres.js';
import { refusalReason } from '../bulk/refusal-reason.js';
import { captureStep, type CaptureInput, type CaptureStep } from './capture-lead.js';
import { runLeadWrite } from './lead-write.js';

/*
 * A CSV import's rows captured several to a transaction. The read models are written when the transaction commits,
 * so a capture cannot see a lead another capture of its transaction made or changed: a wave holds rows that share no
 * person (phone or email) and no existing lead, and each existing lead a wave adds an enquiry to is locked when its
 * transaction opens (appending to a lead it did not lock, found since, rolls the wave back: its rows are then done
 * one at a time).
 */

type Item = JobItemWork<unknown>;

/** A row ready for its capture, or refused before it (its body no longer passes the rules of today). */
export type RowToImport = { item: Item; capture: CaptureInput } | { item: Item; refused: string };

type WaveRow = { item: Item; step: CaptureStep; capture: CaptureInput } | { item: Item; refused: string };

interface ImportWave {
  rows: WaveRow[];
  /** Every row's locks and the streams of the existing leads they add enquiries to. */
  streams: Set<string>;
  leads: Set<string>;
}

/**
 * The rows in order, a wave after another, each cut just before the rows it runs: the existing leads a wave's rows
 * reach are looked up once the waves before it have committed.
 */
export async function importInWaves(
  services: Pick<AppServices, 'pool' | 'store' | 'now'>,
  context: () => CommandContext,
  tenantId: string,
  rows: RowToImport[],
): Promise<void> {
  let rest: WaveRow[] = rows.map((row) => ('capture' in row ? { ...row, step: captureStep(row.capture) } : row));
  while (rest.length > 0) {
    const wave = await nextWave(services.pool, tenantId, rest);
    await runImportWave(services, context(), wave);
    rest = rest.slice(wave.rows.length);
  }
}

/** The longest run of the first rows that share no lock (no person) and no existing lead. */
async function nextWave(sql: Queryable, tenantId: string, rows: WaveRow[]): Promise<ImportWave> {
  const wave: ImportWave = { rows: [], streams: new Set(), leads: new Set() };
  const candidates = sharingNoLock(rows);
  const captured = candidates.flatMap((row) => ('step' in row ? [row.capture] : []));
  const existing = await existingLeads(sql, tenantId, captured);
  for (const row of candidates) {
    if ('step' in row) {
      const lead = existing.get(row.capture);
      if (lead && wave.leads.has(lead)) break;
      for (const lock of row.step.locks) wave.streams.add(lock);
      if (lead) {
        wave.leads.add(lead);
        wave.streams.add(lead);
      }
    }
    wave.rows.push(row);
  }
  return wave;
}

/** The first rows, up to the first that shares a lock (a person) with a row before it. */
function sharingNoLock(rows: WaveRow[]): WaveRow[] {
  const locked = new Set<string>();
  const apart: WaveRow[] = [];
  for (const row of rows) {
    if ('step' in row) {
      if (row.step.locks.some((lock) => locked.has(lock))) break;
      for (const lock of row.step.locks) locked.add(lock);
    }
    apart.push(row);
  }
  return apart;
}

/** The stream of the lead each capture would add an enquiry to today, if any. */
async function existingLeads(sql: Queryable, tenantId: string, captures: CaptureInput[]) {
  const found = new Map<CaptureInput, string>();
  for (const sandbox of [false, true]) {
    const some = captures.filter((c) => (c.key.mode === 'test') === sandbox);
    const ids = await captureLookupIds(
      sql,
      tenantId,
      sandbox,
      some.map((c) => c.submission),
    );
    some.forEach((capture, i) => {
      if (ids[i]) found.set(capture, leadStream(ids[i]));
    });
  }
  return found;
}

/**
 * One wave in one lead write: its rows' captures side by side on the transaction's pipelined connection, a row its
 * rules refuse settled as refused (refused before anything of it is written), any other error rolling the wave back.
 */
async function runImportWave(
  services: Pick<AppServices, 'store' | 'now'>,
  context: CommandContext,
  wave: ImportWave,
): Promise<void> {
  await runLeadWrite(services, context, [...wave.streams], async (tx) => {
    const guarded = appendingOnlyTo(tx, wave.leads);
    const settled = await Promise.allSettled(wave.rows.map((row) => importOne(guarded, row)));
    const fault = settled.find((r) => r.status === 'rejected');
    if (fault) throw fault.reason;
  });
}

async function importOne(tx: StoreTransaction, row: WaveRow): Promise<void> {
  let reason: string | undefined;
  if ('refused' in row) reason = row.refused;
  else
    try {
      await row.step.write(tx);
      return;
    } catch (error) {
      reason = refusalReason(error);
      if (reason === undefined) throw error;
    }
  if (await row.item.claim(tx.sql)) await row.item.settle(tx.sql, { outcome: 'refused', reason });
}

/** The transaction, refusing an append to an existing stream other than `leads` (a lead found since the waves were cut). */
function appendingOnlyTo(tx: StoreTransaction, leads: ReadonlySet<string>): StoreTransaction {
  return {
    get context() {
      return tx.context;
    },
    get sql() {
      return tx.sql;
    },
    get writes() {
      return tx.writes;
    },
    whenOpened: () => tx.whenOpened(),
    get appended() {
      return tx.appended;
    },
    setTime: (now) => tx.setTime(now),
    readStream: (streamId) => tx.readStream(streamId),
    append: async (streamId, expected, events) => {
      if (expected !== 'no_stream' && !leads.has(streamId))
        throw new Error(`Lead stream ${streamId} was not found when the import's rows were grouped: done one by one`);
      return tx.append(streamId, expected, events);
    },
  };
}
