import { decideCapture, type CaptureDecision } from '../../domain/leads/decide.js';
import { leadStream, type Named } from '../../domain/leads/lead.js';
import type { StoreTransaction } from '../../events/event-store.js';
import type { CommandContext } from '../../events/types.js';
import type { AppServices } from '../../bootstrap.js';
import type { KeyLookup } from '../../keys/repository.js';
import type { CaptchaVerdict } from '../../intake/captcha.js';
import {
  findAnswer,
  idempotencyLock,
  idempotencyScope,
  saveAnswer,
  type CaptureKind,
  type IdempotencyScope,
  type StoredAnswer,
} from '../../intake/idempotency.js';
import type { LeadSubmission } from '../../domain/leads/submission.js';
import { captureLookup, type CaptureLookup } from '../../projections/leads-queries.js';
import { monthlyLeadQuota } from '../../workspaces/plans.js';
import { consumeQuota, LEADS_METRIC } from '../../workspaces/quota.js';
import type { Workspace } from '../../workspaces/workspace.js';
import { CaptchaFailedError, IdempotencyKeyReusedError } from '../errors.js';
import { runLeadWriteAfterReads } from './lead-write.js';
import { newId } from '../../shared/ids.js';
import { credentialedEmails } from '../../identity/members.js';
import type { Queryable } from '../../storage/postgres.js';

/**
 * The caller's own lookup and write in the capture's transaction (a CSV import's row → lead record): `earlier` is
 * asked first, under `locks`, and its answer replayed; `save` runs after the capture wrote its events.
 */
export interface CaptureRecord {
  locks: string[];
  earlier(tx: StoreTransaction): Promise<StoredAnswer | null>;
  save(tx: StoreTransaction, answer: StoredAnswer): Promise<void>;
}

/**
 * Who a capture comes from: an API key, or a member through the console (kind `console`, live, source `console`) or
 * a CSV import (source `import`).
 */
export type CaptureChannel = Pick<KeyLookup, 'mode' | 'source_key'> & { kind: CaptureKind };

export interface CaptureInput {
  workspace: Workspace;
  key: CaptureChannel;
  submission: LeadSubmission;
  /** The Idempotency-Key header and the body's fingerprint. */
  idempotency: { key: string; requestHash: string } | null;
  /** The captcha verdict of a public-key submission (checked only once no earlier answer is replayed). */
  captcha: CaptchaVerdict | null;
  /** The command context for the time the write was registered at. */
  context: (now: Date) => CommandContext;
  now: () => Date;
  record?: CaptureRecord;
  /** The new lead's id, when the caller orders several captures' ids (a CSV import's rows): else a new one. */
  leadId?: string;
}

export interface CaptureAnswer extends StoredAnswer {
  replayed: boolean;
}

/** The source of a key's leads: its own source key, else `api` for secret keys and `web_form` for public ones. */
export function leadSource(workspace: Workspace, key: Pick<CaptureChannel, 'kind' | 'source_key'>): Named {
  const sourceKey = key.source_key ?? (key.kind === 'public' ? 'web_form' : 'api');
  const named = workspace.settings.sources.find((s) => s.key === sourceKey);
  return { key: sourceKey, name: named?.name ?? sourceKey.replaceAll('_', ' ').replace(/^./, (c) => c.toUpperCase()) };
}

/** Locks that make every capture for one person in a workspace and mode wait for the others. */
export function identityLocks(
  tenantId: string,
  sandbox: boolean,
  s: Pick<LeadSubmission, 'phone' | 'email'>,
): string[] {
  const mode = sandbox ? 'test' : 'live';
  return [
    s.phone ? `lock:lead-phone:${tenantId}:${mode}:${s.phone}` : null,
    s.email ? `lock:lead-email:${tenantId}:${mode}:${s.email}` : null,
  ].filter((v): v is string => v !== null);
}

/**
 * The write of a lead submission that passed the checks before it (`submitLead`): replays the first answer of a
 * repeated Idempotency-Key, else refuses a failed captcha, else creates a lead or adds an enquiry to the lead the person already has. Everything happens while holding the person's phone and
 * email locks and the idempotency key's lock, so simultaneous submissions make one lead and one answer. A new live
 * lead takes its slot of the monthly quota in the same transaction (`consumeQuota`), before its events are written.
 */
export async function captureLead(services: Pick<AppServices, 'store'>, input: CaptureInput): Promise<CaptureAnswer> {
  const capture = prepareCapture(input);
  const context = input.context(input.now());
  // The capture's reads leave with BEGIN, the gate and the locks: one round trip before its writes and COMMIT.
  return runLeadWriteAfterReads(
    { store: services.store, now: input.now },
    context,
    captureLocks(capture),
    (tx) => readCapture(tx, capture),
    (tx, reads) => writeCapture(tx, capture, reads),
  );
}

/** A capture as one step of a lead write another command opens (a CSV import's batch): the locks it needs and its write. */
export interface CaptureStep {
  locks: string[];
  write(tx: StoreTransaction): Promise<CaptureAnswer>;
}

export function captureStep(input: CaptureInput): CaptureStep {
  const capture = prepareCapture(input);
  return {
    locks: captureLocks(capture),
    write: async (tx) => writeCapture(tx, capture, await readCapture(tx, capture)),
  };
}

/** What a capture settles before its transaction: the new lead's id, the mode, the key's scope, quota and source. */
interface Capture {
  input: CaptureInput;
  leadId: string;
  sandbox: boolean;
  tenantId: string;
  keyScope: IdempotencyScope;
  quotaLimit: number | null;
  source: Named;
  consentSource: string;
}

function prepareCapture(input: CaptureInput): Capture {
  const { workspace, key } = input;
  const sandbox = key.mode === 'test';
  const source = leadSource(workspace, key);
  return {
    input,
    leadId: input.leadId ?? newId(),
    sandbox,
    tenantId: workspace.id,
    keyScope: idempotencyScope(workspace.id, key),
    quotaLimit: sandbox ? null : monthlyLeadQuota(workspace),
    source,
    consentSource:
      key.kind === 'public' ? `${source.key}@${workspace.settings.widget.consent_text_version}` : source.key,
  };
}

/**
 * The person's identity locks and the idempotency key's. A new lead's stream needs no lock (its first event's unique
 * revision refuses a second writer); a duplicate's existing stream is locked when the enquiry is appended.
 */
function captureLocks({ input, tenantId, sandbox, keyScope }: Capture): string[] {
  const locks = identityLocks(tenantId, sandbox, input.submission);
  if (input.idempotency) locks.push(idempotencyLock(keyScope, input.idempotency.key));
  if (input.record) locks.push(...input.record.locks);
  return locks;
}

/** The emails of the workspace's active members whose account can sign in (a password or a passkey). */
async function membersWhoCanSignIn(sql: Queryable, workspace: Workspace): Promise<ReadonlySet<string>> {
  const members = workspace.settings.users.filter((u) => u.active && !u.pending).map((u) => u.email);
  return members.length === 0 ? new Set() : credentialedEmails(sql, members);
}

/**
 * What a capture reads before it decides, sent together and needing no transaction time (so they can leave with the
 * transaction's opening): the Idempotency-Key's earlier answer, the person's existing lead, and who of the workspace can
 * sign in (for a new lead's owner; read whatever the lookup finds, rather than after it, to save the round trip).
 */
interface CaptureReads {
  earlier: StoredAnswer | undefined;
  found: CaptureLookup;
  canSignIn: ReadonlySet<string>;
}

async function readCapture(tx: StoreTransaction, capture: Capture): Promise<CaptureReads> {
  const { input } = capture;
  const { idempotency, submission } = input;
  // An answer is looked up as of the request's time: the transaction's own is read only once the gate is held.
  const [earlier, found, canSignIn] = await Promise.all([
    idempotency ? findAnswer(tx.sql, capture.keyScope, idempotency.key, input.now()) : undefined,
    captureLookup(tx.sql, capture.tenantId, capture.sandbox, submission.phone, submission.email),
    membersWhoCanSignIn(tx.sql, input.workspace),
  ]);
  return { earlier, found, canSignIn };
}

async function writeCapture(tx: StoreTransaction, capture: Capture, reads: CaptureReads): Promise<CaptureAnswer> {
  const { input } = capture;
  const { idempotency, submission } = input;
  const earlier = earlierAnswer(reads.earlier, input) ?? (await input.record?.earlier(tx)) ?? null;
  if (earlier) return { ...earlier, replayed: true };
  if (input.captcha && !input.captcha.ok) throw new CaptchaFailedError();

  const { found } = reads;
  const now = tx.context.now;
  const decision = decideCapture({
    leadId: capture.leadId,
    submission,
    existing: found.duplicate ?? null,
    source: capture.source,
    consentSource: capture.consentSource,
    settings: input.workspace.settings,
    // Only a new lead is assigned.
    canSignIn: found.duplicate ? undefined : reads.canSignIn,
    now,
  });
  const answer =
    decision.outcome === 'duplicate'
      ? await addEnquiry(tx, capture, decision)
      : await createLead(tx, capture, decision, now);
  if (idempotency) await saveAnswer(tx.writes, capture.keyScope, idempotency.key, answer, now);
  await input.record?.save(tx, answer);
  return { ...answer, replayed: false };
}

/** The first answer given to this Idempotency-Key, refused when it answered another request. */
function earlierAnswer(earlier: StoredAnswer | undefined, input: CaptureInput): StoredAnswer | null {
  if (!input.idempotency || !earlier) return null;
  if (earlier.requestHash !== input.idempotency.requestHash) throw new IdempotencyKeyReusedError();
  return earlier;
}

async function addEnquiry(tx: StoreTransaction, { input }: Capture, decision: CaptureDecision): Promise<StoredAnswer> {
  await tx.append(leadStream(decision.lead.id), 'any', decision.events);
  return {
    requestHash: input.idempotency?.requestHash ?? '',
    status: 200,
    body: { id: decision.lead.id, duplicate: true },
  };
}

async function createLead(
  tx: StoreTransaction,
  { input, leadId, sandbox, tenantId, quotaLimit }: Capture,
  decision: CaptureDecision,
  now: Date,
): Promise<StoredAnswer> {
  // The check and the count in one step: refused past the limit, the transaction rolls back (429 quota_exceeded).
  if (!sandbox) await consumeQuota(tx.sql, tenantId, LEADS_METRIC, quotaLimit, now);
  await tx.append(leadStream(leadId), 'no_stream', decision.events);
  const body = {
    id: leadId,
    status: decision.lead.stage.key,
    assigned_to: decision.lead.owner?.email ?? null,
    duplicate: false,
    test_mode: sandbox,
  };
  return { requestHash: input.idempotency?.requestHash ?? '', status: 201, body };
}
