/** Who caused an event: an API key, a workspace user (workspace UI, CLI, admin interface) or the system itself. */
export type Actor =
  | { type: 'key'; key_id: string; key_name?: string }
  | { type: 'user'; user_id?: string | null; email?: string | null; name?: string | null }
  | { type: 'system'; name: string };

export interface EventMetadata {
  actor: Actor;
  correlation_id: string;
  causation_id?: string | null;
  [extra: string]: unknown;
}

/** Position in the global log: the appending transaction's id, then the row's sequence number. */
export interface GlobalPosition {
  /** xid8 as a decimal string (64-bit). */
  txId: string;
  position: number;
}

export const START_OF_LOG: GlobalPosition = { txId: '0', position: 0 };

export interface NewEvent {
  /** Defaults to a fresh uuid. The id never changes afterwards: webhooks carry it as the event id. */
  id?: string;
  type: string;
  data: Record<string, unknown>;
}

/** An event as its transaction wrote it. Its global position is known once read back from the log. */
export interface RecordedEvent {
  id: string;
  streamId: string;
  revision: number;
  type: string;
  tenantId: string;
  sandbox: boolean;
  data: Record<string, unknown>;
  metadata: EventMetadata;
  createdAt: Date;
}

/** An event read from the log, with its place in the global order. */
export interface StoredEvent extends RecordedEvent {
  position: GlobalPosition;
}

/** The revision an append expects the stream to be at: a number (0 is the first event), none yet, or anything. */
export type ExpectedRevision = number | 'no_stream' | 'any';

/** The who, where and when shared by every event a command appends. */
export interface CommandContext {
  tenantId: string;
  sandbox: boolean;
  metadata: EventMetadata;
  now: Date;
}

export class WrongExpectedRevisionError extends Error {
  readonly streamId: string;
  readonly expected: ExpectedRevision;
  readonly actual: number | 'no_stream' | 'unknown';
  constructor(
    streamId: string,
    expected: ExpectedRevision,
    /** `unknown` when the conflict surfaced where the transaction could no longer read the stream (an aborted insert). */
    actual: number | 'no_stream' | 'unknown',
  ) {
    super(
      actual === 'unknown'
        ? `Stream ${streamId} was written by another transaction; expected ${expected}`
        : `Stream ${streamId} is at revision ${actual}, expected ${expected}`,
    );
    this.streamId = streamId;
    this.expected = expected;
    this.actual = actual;
    this.name = 'WrongExpectedRevisionError';
  }
}

/** An append of personal values to a stream whose data key was erased (crypto-shredded): nothing can seal them. */
export class ErasedStreamError extends Error {
  readonly streamId: string;
  constructor(streamId: string) {
    super(`Stream ${streamId} was erased: it takes no personal data`);
    this.streamId = streamId;
    this.name = 'ErasedStreamError';
  }
}
