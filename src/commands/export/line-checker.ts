import { leadStream } from '../../domain/leads/lead.js';
import { Compile, type Validator } from 'typebox/compile';
import { Value } from 'typebox/value';
import type { TSchema } from 'typebox';
import { contentDigest, GENESIS, link } from '../../events/chain.js';
import type { EventMetadata, GlobalPosition, RecordedEvent } from '../../events/types.js';
import { anchorText } from '../../events/verify-chain.js';
import { ExportEvent, ExportHeader, ExportTrailer } from '../../schemas/export.js';
import type { Erasure } from './erasure-ledger.js';
import { eventNaming, type Reference } from './event-references.js';
import { isAfter, parsePositionToken, positionToken, tokenOrStart } from './position-token.js';
import { StreamHeadTable } from './stream-heads.js';
import { parseJsonText } from '../../shared/json-text.js';

/** Why an import refuses a file: the file and line (1-based) and what is wrong there. */
export class ImportRefusedError extends Error {
  override name = 'ImportRefusedError';
  readonly file: string;
  readonly line: number;
  readonly reason: string;
  constructor(file: string, line: number, reason: string) {
    super(line > 0 ? `${file}, line ${line}: ${reason}` : `${file}: ${reason}`);
    this.file = file;
    this.line = line;
    this.reason = reason;
  }
}

/** An event line checked: what the event store keeps of it, with its hash. */
export interface CheckedEvent extends RecordedEvent {
  /** The stream's data key row as exported (crypto-shredding); imported beside the events. */
  personalKey?: { person: string; wrapped: string | null; erased_at: string | null };
  hash: Buffer;
  /** Where the event was read, for refusals found past the checker (in the database). */
  source: { file: string; line: number };
}

export type CheckedLine =
  { kind: 'header'; header: ExportHeader } | { kind: 'event'; event: CheckedEvent } | { kind: 'trailer' };

type Phase = 'header' | 'events' | 'done';

function parseJson(text: string): { value: unknown } | null {
  try {
    return { value: parseJsonText(text) };
  } catch {
    return null;
  }
}

/** Each line schema compiled once: checking a line with the interpreting `Value.Check` was a fifth of an import. */
const validators = new WeakMap<TSchema, Validator>();

function validatorOf(schema: TSchema): Validator {
  let validator = validators.get(schema);
  if (validator === undefined) {
    validator = Compile(schema);
    validators.set(schema, validator);
  }
  return validator;
}

function conform<T>(schema: TSchema, value: unknown, what: string): T | string {
  if (validatorOf(schema).Check(value)) return value as T;
  const first = [...Value.Errors(schema, value)][0];
  return `not a valid ${what}: ${first ? `${first.instancePath || '/'} ${first.message}` : 'wrong shape'}`;
}

/** Whether a JSON value holds U+0000 in a string or a key (PostgreSQL's text and jsonb cannot). */
function holdsNul(value: unknown): boolean {
  if (typeof value === 'string') return value.includes('\u0000');
  if (Array.isArray(value)) return value.some(holdsNul);
  if (typeof value === 'object' && value !== null)
    return Object.entries(value).some(([key, v]) => key.includes('\u0000') || holdsNul(v));
  return false;
}

/** Whether a time is spelt as `Date.prototype.toISOString` spells it, the one spelling an export writes. */
function isExportTime(text: string): boolean {
  const time = new Date(text);
  return !Number.isNaN(time.getTime()) && time.toISOString() === text;
}

/**
 * Checks an export line by line, with no I/O: the header, then each event (its shape, its workspace, its place in
 * the global order, its revision and hash against the previous event of its stream), then the trailer (the count,
 * the position and the workspace head recomputed from every event seen). Several files continue one another: each
 * file's header must start where the previous file's trailer ended, and the chains carry over.
 */
export class ExportLineChecker {
  private phase: Phase = 'header';
  private file = '';
  private line = 0;
  private fileEvents = 0;
  /** Each stream's head, kept until the import ends: in fixed-width bytes (stream-heads.ts), one entry a stream. */
  private readonly heads = new StreamHeadTable();
  private last: GlobalPosition | null = null;
  private next: string | null = null;
  private workspaceId: string | null = null;
  private totalEvents = 0;
  /** Streams another event names, not seen yet, with the line that first named each. */
  private readonly unresolved = new Map<string, { reference: Reference; file: string; line: number }>();
  private readonly erased = new Map<string, Erasure>();

  get events(): number {
    return this.totalEvents;
  }

  /** The position of the last event checked (in the source's global log). */
  get lastPosition(): GlobalPosition | null {
    return this.last;
  }

  /** The erasures the trailers carried (each person once, at the earliest time). */
  get erasures(): Erasure[] {
    return [...this.erased.values()];
  }

  /** The workspace head over every event checked so far. */
  head(): string {
    return this.heads.workspaceHead();
  }

  startFile(name: string): void {
    if (this.phase !== 'header' && this.phase !== 'done')
      throw new ImportRefusedError(this.file, this.line, 'the file ended before its trailer line (cut short?)');
    this.file = name;
    this.line = 0;
    this.fileEvents = 0;
    this.phase = 'header';
  }

  /** Ends the import: every stream an event named must have been among its streams. */
  finish(): void {
    for (const { reference, file, line } of this.unresolved.values())
      throw new ImportRefusedError(
        file,
        line,
        `${reference.what} names ${reference.stream}, which is not a stream of this workspace's export`,
      );
  }

  /** Ends the current file: it must have ended with its trailer. */
  endFile(): void {
    if (this.phase === 'header') throw this.refuse('the file is empty: no header line');
    if (this.phase !== 'done') throw this.refuse('the file ends without its trailer line (cut short?)');
  }

  check(text: string): CheckedLine {
    this.line += 1;
    if (this.phase === 'done') throw this.refuse('a line after the trailer');
    const parsed = parseJson(text);
    if (parsed === null)
      throw this.refuse(
        `not JSON (expected ${this.phase === 'header' ? 'the header line' : 'an event or the trailer'})`,
      );
    const { value } = parsed;
    if (this.phase === 'header') return this.checkHeader(value);
    const isTrailer = typeof value === 'object' && value !== null && Object.hasOwn(value, 'trailer');
    return isTrailer ? this.checkTrailer(value) : this.checkEvent(value);
  }

  private refuse(reason: string): ImportRefusedError {
    return new ImportRefusedError(this.file, this.line, reason);
  }

  private checkHeader(value: unknown): CheckedLine {
    const header = conform<ExportHeader>(ExportHeader, value, 'header line (format visa-crm-export, version 1)');
    if (typeof header === 'string') throw this.refuse(header);
    if (this.workspaceId === null) {
      if (header.after !== null)
        throw this.refuse(
          `this export continues from ${header.after}: import the export it continues first, in the same command`,
        );
      this.workspaceId = header.workspace.id;
    } else {
      if (header.workspace.id !== this.workspaceId)
        throw this.refuse(`an export of workspace ${header.workspace.id}, not of ${this.workspaceId}`);
      if (header.after !== this.next)
        throw this.refuse(
          `this export continues from ${header.after ?? 'the start'}, but the one before ended at ${this.next}`,
        );
    }
    this.phase = 'events';
    return { kind: 'header', header };
  }

  private checkEvent(value: unknown): CheckedLine {
    const line = conform<ExportEvent>(ExportEvent, value, 'event line');
    if (typeof line === 'string') throw this.refuse(line);
    if (line.tenant !== this.workspaceId)
      throw this.refuse(`event ${line.id} belongs to workspace ${line.tenant}, not ${this.workspaceId}`);
    this.checkNaming(line);
    const position = parsePositionToken(line.position);
    if (position === null) throw this.refuse(`event ${line.id}: the position ${line.position} is out of range`);
    // One text per value, as the export writes it: a time or position spelt otherwise is a changed line that the
    // chain cannot see (the hash covers the instant, not its spelling).
    if (positionToken(position) !== line.position)
      throw this.refuse(`event ${line.id}: the position ${line.position} is not written as an export writes it`);
    if (!isExportTime(line.time))
      throw this.refuse(
        `event ${line.id}: the time ${line.time} is not written as an export writes it (ISO 8601, UTC, milliseconds)`,
      );
    const floor = this.last ?? tokenOrStart(this.next);
    if (!isAfter(position, floor))
      throw this.refuse(`event ${line.id} at ${line.position} is out of order (not after ${positionToken(floor)})`);
    const previous = this.heads.get(line.stream);
    const expected = (previous?.revision ?? -1) + 1;
    if (line.revision !== expected)
      throw this.refuse(
        `event ${line.id}: revision ${line.revision} of ${line.stream} where the stream's next is ${expected} (a line missing, added or moved)`,
      );
    if (
      holdsNul(line.data) ||
      holdsNul(line.metadata) ||
      line.stream.includes('\u0000') ||
      line.type.includes('\u0000')
    )
      throw this.refuse(`event ${line.id}: it holds a NUL character, which no stored event can`);
    const event: CheckedEvent = {
      id: line.id,
      streamId: line.stream,
      revision: line.revision,
      type: line.type,
      tenantId: line.tenant,
      sandbox: line.sandbox,
      data: line.data as Record<string, unknown>,
      metadata: line.metadata as EventMetadata,
      createdAt: new Date(line.time),
      hash: Buffer.from(line.hash, 'hex'),
      ...(line.personal_key ? { personalKey: line.personal_key } : {}),
      source: { file: this.file, line: this.line },
    };
    const recomputed = link(previous?.hash ?? GENESIS, line.revision, this.digest(event));
    if (!recomputed.equals(event.hash))
      throw this.refuse(
        `event ${line.id}: its hash does not follow from its content and the stream's previous event (changed?)`,
      );
    this.heads.set(line.stream, line.revision, event.hash);
    this.last = position;
    this.fileEvents += 1;
    this.totalEvents += 1;
    return { kind: 'event', event };
  }

  /** The stream and ids the event names belong to this workspace (docs/decisions.md); references wait for finish. */
  private checkNaming(line: ExportEvent): void {
    const naming = eventNaming(line);
    if (!naming.ok) throw this.refuse(`event ${line.id}: ${naming.reason}`);
    const references = [...naming.references];
    if (line.personal_key)
      references.push({
        stream: leadStream(line.personal_key.person),
        what: `its data key's person ${line.personal_key.person}`,
      });
    this.unresolved.delete(line.stream);
    for (const reference of references)
      if (
        !this.heads.has(reference.stream) &&
        reference.stream !== line.stream &&
        !this.unresolved.has(reference.stream)
      )
        this.unresolved.set(reference.stream, { reference, file: this.file, line: this.line });
  }

  /** The content digest; content RFC 8785 cannot write (a lone surrogate) was never an event the store hashed. */
  private digest(event: CheckedEvent): Buffer {
    try {
      return contentDigest(event);
    } catch {
      throw this.refuse(`event ${event.id}: its content is not canonical JSON (a lone surrogate?)`);
    }
  }

  private checkTrailer(value: unknown): CheckedLine {
    const trailer = conform<ExportTrailer>(ExportTrailer, value, 'trailer line');
    if (typeof trailer === 'string') throw this.refuse(trailer);
    if (trailer.events !== this.fileEvents)
      throw this.refuse(`the trailer counts ${trailer.events} event(s), the file has ${this.fileEvents}`);
    const end = this.last ?? tokenOrStart(this.next);
    if (trailer.next !== positionToken(end))
      throw this.refuse(`the trailer ends at ${trailer.next}, the last event is at ${positionToken(end)}`);
    const head = this.head();
    if (trailer.head !== head || trailer.anchor !== anchorText(head, end))
      throw this.refuse(`the trailer's head ${trailer.head} is not the head of the events, ${head} (an event cut?)`);
    for (const erasure of trailer.erasures ?? []) {
      const known = this.erased.get(erasure.person);
      if (!known || Date.parse(erasure.erased_at) < Date.parse(known.erased_at))
        this.erased.set(erasure.person, erasure);
    }
    this.next = trailer.next;
    this.phase = 'done';
    return { kind: 'trailer' };
  }
}
