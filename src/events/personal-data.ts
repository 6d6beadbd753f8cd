import { createCipheriv, createDecipheriv } from 'node:crypto';
import { randomFromPool } from '../shared/random-pool.js';
import {
  KEY_NONCE_BYTES,
  type NonceKeyDerivation,
  type PurposeBox,
  type SecretBox,
  type SeedDerivation,
} from '../shared/secret-box.js';
import { extractPersonal, restorePersonal, type Location } from './personal-fields.js';

/*
 * Crypto-shredding of personal data in the event log (docs/architecture.md, "Personal data and erasure"). Each stream
 * holding a person's data has a data key of its own (32 bytes, derived from a random seed kept in `personal_data_keys`). An
 * event's personal values (personal-fields.ts) are taken out of its data, replaced by their erased values, and stored
 * sealed beside them under `_personal`: AES-256-GCM with the stream's key, bound (additional data) to the workspace,
 * stream and event id, so a sealed value copied to another event or stream does not open. The hash chain covers the
 * stored data, that is the ciphertext. Opening puts the values back; with the key gone (erased) the event reads as
 * its clear data: every personal value erased, nothing else changed, so replays and projections run as before.
 */

/** The data key under which an event's sealed personal values are stored; absent in events without personal data. */
export const SEALED_FIELD = '_personal';
const ENVELOPE_VERSION = 1;

interface Envelope {
  v: number;
  sealed: string;
}

/** Where an event lives: what its sealed values are bound to. */
export interface EventPlace {
  tenantId: string;
  streamId: string;
  id: string;
  type: string;
}

function additionalData(place: EventPlace): Buffer {
  return Buffer.from(
    `visa-crm/personal/v${ENVELOPE_VERSION}|${place.tenantId.toLowerCase()}|${place.streamId}|${place.id.toLowerCase()}`,
    'utf8',
  );
}

/** The data as stored: personal values sealed under `_personal` (or `data` itself when it holds none). */
export function sealEvent(place: EventPlace, data: Record<string, unknown>, key: Buffer): Record<string, unknown> {
  const { clear, values } = extractPersonal(place.type, data);
  if (values.length === 0) return data;
  const iv = randomFromPool(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(additionalData(place));
  const body = Buffer.concat([cipher.update(JSON.stringify(values), 'utf8'), cipher.final()]);
  const envelope: Envelope = {
    v: ENVELOPE_VERSION,
    sealed: Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64'),
  };
  return { ...clear, [SEALED_FIELD]: envelope };
}

function envelopeOf(data: Record<string, unknown>): Envelope | undefined {
  const value = data[SEALED_FIELD];
  if (typeof value !== 'object' || value === null) return undefined;
  const { v, sealed } = value as Record<string, unknown>;
  if (v !== ENVELOPE_VERSION || typeof sealed !== 'string') throw new Error('Unknown personal data envelope');
  return { v, sealed };
}

/** True when the stored data carries sealed personal values (events written before encryption carry none). */
export function isSealed(data: Record<string, unknown>): boolean {
  return envelopeOf(data) !== undefined;
}

/**
 * The data as the event said it: sealed values opened with the stream's key, or, with no key (the person was
 * erased), the clear data alone, every personal value erased. Plaintext events (written before encryption) read
 * as they are. A key that does not open the values (another SECRET_ENCRYPTION_KEY, changed bytes) is an error.
 */
export function openEvent(
  place: EventPlace,
  stored: Record<string, unknown>,
  key: Buffer | null,
): Record<string, unknown> {
  const envelope = envelopeOf(stored);
  if (!envelope) return stored;
  const { [SEALED_FIELD]: _sealed, ...clear } = stored;
  if (key === null) return clear;
  const raw = Buffer.from(envelope.sealed, 'base64');
  const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, 12));
  decipher.setAAD(additionalData(place));
  decipher.setAuthTag(raw.subarray(12, 28));
  const text = Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
  return restorePersonal(clear, JSON.parse(text) as [Location, unknown][]);
}

/**
 * The person a stream's data belongs to, for a new stream's key: a lead's own id, an application's lead, and for a
 * document, task or invoice the lead its first event names (`person_id`).
 */
export function personOfNewStream(
  streamId: string,
  first: { type: string; data: Record<string, unknown> } | undefined,
): string | null {
  if (streamId.startsWith('lead-')) return streamId.slice('lead-'.length);
  if (streamId.startsWith('application-') && first?.type === 'application.opened') {
    const leadId = first.data.lead_id;
    return typeof leadId === 'string' ? leadId : null;
  }
  const filedUnderPerson: Record<string, string> = {
    'document-': 'document.received',
    'task-': 'task.created',
    'invoice-': 'invoice.issued',
  };
  for (const [prefix, type] of Object.entries(filedUnderPerson))
    if (streamId.startsWith(prefix) && first?.type === type) {
      const personId = first.data.person_id;
      return typeof personId === 'string' ? personId : null;
    }
  return null;
}

/** Keys kept at most: past it the cache starts over (deriving one is an AES call, unwrapping one an AES-GCM open). */
const CACHE_LIMIT = 20_000;
/** A stored key row holding the nonce its key is derived from (AES, RFC 8452's derivation). */
const NONCE_PREFIX = 's2:';
/** Rows written before hold an HMAC seed (`s1:`) or the key wrapped (`v2:`). */
const SEED_PREFIX = 's1:';
const SEED_BYTES = 16;
/** New keys derived at once: one AES call per this many new people. */
const NEW_KEY_BATCH = 64;

/**
 * Makes and reads the stream data keys of `personal_data_keys`. A new key is derived from a random 12-byte nonce
 * (NonceKeyDerivation, under the `person-key-nonce` purpose key) and the row stores the nonce (`s2:` + base64); new
 * keys are derived NEW_KEY_BATCH at a time. Rows written before hold a 16-byte seed of an HMAC derivation (`s1:`) or
 * a random key wrapped with the `person-key` box (`v2:`); both still open. Deleting the row's value erases any kind.
 * The cache maps a stored value, as read from personal_data_keys together with the events, to its key; it is never
 * asked for a stream's key by name. Every read of events reads the stream's key row in the same statement, so once
 * an erasure has committed no process finds a stored value to look up, whatever its cache holds: a cache entry
 * cannot outlive an erasure.
 */
export class PersonalDataKeys {
  private readonly keys = new Map<string, Buffer>();
  /** Keys derived ahead for new people, taken from the end; each is handed out once. */
  private readonly ready: { key: Buffer; stored: string }[] = [];

  constructor(
    private readonly box: PurposeBox,
    private readonly seeds: SeedDerivation,
    private readonly nonces: NonceKeyDerivation,
  ) {}

  /** The keys made and read with a SecretBox's person-key purposes. */
  static of<T extends PersonalDataKeys>(
    this: new (box: PurposeBox, seeds: SeedDerivation, nonces: NonceKeyDerivation) => T,
    secrets: Pick<SecretBox, 'personKeys' | 'personKeySeeds' | 'personKeyNonces'>,
  ): T {
    return new this(secrets.personKeys, secrets.personKeySeeds, secrets.personKeyNonces);
  }

  /**
   * A new data key and what its key row stores (the nonce it is derived from). Not put in the cache: at a few
   * thousand new leads a second the cache filled with keys nobody asked for again, and the collector paid for
   * keeping them (main-thread collection per capture, above the unsealed service's, fell from 12.5 to 5.8 µs in a
   * profile at 64 clients; docs/benchmarks.md, fourteenth session), where deriving one again is one AES call.
   */
  newKey(): { key: Buffer; stored: string } {
    if (this.ready.length === 0) this.deriveBatch();
    return this.ready.pop()!;
  }

  private deriveBatch(): void {
    const nonces = Array.from({ length: NEW_KEY_BATCH }, () => randomFromPool(KEY_NONCE_BYTES));
    this.nonces
      .deriveAll(nonces)
      .forEach((key, i) => this.ready.push({ key, stored: NONCE_PREFIX + nonces[i]!.toString('base64') }));
  }

  /** The data key of a key row's stored value: derived from its nonce or seed, or unwrapped (the first version's rows). */
  keyOf(stored: string): Buffer {
    const cached = this.keys.get(stored);
    if (cached) return cached;
    const key = stored.startsWith(NONCE_PREFIX)
      ? this.fromNonce(stored)
      : stored.startsWith(SEED_PREFIX)
        ? this.fromSeed(stored)
        : this.fromWrapped(stored);
    this.remember(stored, key);
    return key;
  }

  private fromNonce(stored: string): Buffer {
    const nonce = Buffer.from(stored.slice(NONCE_PREFIX.length), 'base64');
    if (nonce.length !== KEY_NONCE_BYTES) throw new Error('A personal data key nonce is not 12 bytes');
    return this.nonces.derive(nonce);
  }

  private fromSeed(stored: string): Buffer {
    const seed = Buffer.from(stored.slice(SEED_PREFIX.length), 'base64');
    if (seed.length !== SEED_BYTES) throw new Error('A personal data key seed is not 16 bytes');
    return this.seeds.derive(seed);
  }

  private fromWrapped(wrapped: string): Buffer {
    const key = Buffer.from(this.box.open(wrapped), 'base64');
    if (key.length !== 32) throw new Error('A personal data key is not 32 bytes');
    return key;
  }

  private remember(stored: string, key: Buffer): void {
    if (this.keys.size >= CACHE_LIMIT) this.keys.clear();
    this.keys.set(stored, key);
  }

  /** For tests: how many keys the cache holds. */
  get cached(): number {
    return this.keys.size;
  }
}

const keysByPool = new WeakMap<object, PersonalDataKeys>();

/**
 * The keys of the service whose event store uses `pool` (set by PostgresEventStore). Readers that get the pool alone
 * (read-model rebuild, the webhook fan-out) find them here, so every reader of a pool opens events the same way.
 */
export function registerPersonalDataKeys(pool: object, keys: PersonalDataKeys): void {
  keysByPool.set(pool, keys);
}

export function personalDataKeysOf(pool: object): PersonalDataKeys | undefined {
  return keysByPool.get(pool);
}
