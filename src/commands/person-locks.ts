/*
 * The person locks every write to a person's data takes (shared by writes, alone by an erasure), and the gates tests
 * hold an erasure race at.
 */
import type { StoreTransaction } from '../events/event-store.js';
import { Refusal } from '../domain/refusal.js';
import type { Queryable } from '../storage/postgres.js';
import { NotFoundError } from './errors.js';
import { findApplication } from '../projections/applications.js';
import { erasedAt } from './leads/erase-copies.js';
import type { Subject } from './subject.js';

/** Where a test holds one side of a race between an erasure and a write (docs/decisions.md, "Erasure and writes"). */
export type InterleavingPoint =
  'person-locked' | 'erasure-locked' | 'erasure-keys' | 'erasure-commit' | 'fanout-read' | 'fanout-insert';

/** Set by tests only; unset, nothing waits. */
export const interleavingGates: { at?: (point: InterleavingPoint, personId: string) => Promise<void> } = {};

export async function passGate(point: InterleavingPoint, personId: string): Promise<void> {
  if (interleavingGates.at) await interleavingGates.at(point, personId);
}

// The person's lock is their lead's read-model row. Writes share it (FOR KEY SHARE: they never wait on each other, and
// the lead projection's own UPDATE does not conflict); an erasure takes it alone (FOR UPDATE). Taken after the
// transaction's stream locks and before anything else is read.
const SHARE_PERSON = 'SELECT id FROM leads WHERE id = $1 AND tenant_id = $2 AND sandbox = $3 FOR KEY SHARE';
const ERASE_PERSON = 'SELECT id FROM leads WHERE id = $1 AND tenant_id = $2 AND sandbox = $3 FOR UPDATE';
const SHARE_PERSON_OF_STREAM = `SELECT l.id FROM personal_data_keys k
  JOIN leads l ON l.id = k.person_id AND l.tenant_id = k.tenant_id
 WHERE k.stream_id = $1 AND k.tenant_id = $2 AND l.sandbox = $3 FOR KEY SHARE OF l`;

/** Takes the person's lock for a write; false when the workspace and mode have no such lead. */
export async function lockPerson(tx: StoreTransaction, personId: string): Promise<boolean> {
  const { tenantId, sandbox } = tx.context;
  const locked = await tx.sql.query(SHARE_PERSON, [personId, tenantId, sandbox]);
  if (locked.rowCount === 0) return false;
  await passGate('person-locked', personId);
  return true;
}

/**
 * Takes, for a write to an existing stream, the lock of the person the stream is filed under (its data key row says
 * who), before the stream is read: an erasure then either committed before (the read sees the keys gone, and personal
 * values are refused at append) or starts after this write commits. A stream with no key row has no person to lock.
 */
export async function lockPersonOfStream(tx: StoreTransaction, streamId: string): Promise<void> {
  const { tenantId, sandbox } = tx.context;
  const locked = await tx.sql.query<{ id: string }>(SHARE_PERSON_OF_STREAM, [streamId, tenantId, sandbox]);
  const person = locked.rows[0]?.id;
  if (person !== undefined) await passGate('person-locked', person);
}

/** Takes the person's lock for their erasure; false when the workspace and mode have no such lead. */
export async function lockPersonToErase(
  sql: Queryable,
  tenantId: string,
  sandbox: boolean,
  personId: string,
): Promise<boolean> {
  const locked = await sql.query(ERASE_PERSON, [personId, tenantId, sandbox]);
  return locked.rowCount !== 0;
}

/**
 * The lead whose person the subject belongs to (an application's lead), locked for the write (lockPerson) and checked
 * under that lock: 404 when the lead or application does not exist in the workspace and mode. An erased person takes
 * nothing new that may name them (a task's title, an invoice's lines, a document): 409 `lead_erased`.
 */
export async function personOfSubject(tx: StoreTransaction, subject: Subject): Promise<string> {
  const { tenantId, sandbox } = tx.context;
  let person: string;
  if (subject.lead_id !== null) {
    person = subject.lead_id;
    if (!(await lockPerson(tx, person))) throw new NotFoundError('lead');
  } else {
    const application = await findApplication(tx.sql, tenantId, sandbox, subject.application_id);
    if (!application) throw new NotFoundError('application');
    person = application.lead_id;
    if (!(await lockPerson(tx, person))) throw new NotFoundError('application');
  }
  // Read after the lock was granted: an erasure that held it has committed, and this statement sees it.
  if (await erasedAt(tx.sql, tenantId, person))
    throw new Refusal('conflict', 'lead_erased', 'This lead was erased: it takes nothing new that may name them');
  return person;
}
