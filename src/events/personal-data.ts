import { createCipheriv, createDecipheriv, createSecretKey, type KeyObject } from 'node:crypto';
import { randomFromPool } from '../shared/random-pool.js';
import { KEY_NONCE_BYTES, type PurposeBox, type SecretBox } from '../shared/secret-box.js';
import { extractPersonal, restorePersonal, type Location } from './personal-fields.js';
import { parseJsonText } from '../shared/json-text.js';

/*
 * Crypto-shredding of personal data in the event log (docs/architecture.md, "Personal data and erasure"). Each stream
 * holding a person's data has a data key of its own (32 random bytes, kept wrapped in `personal_data_keys`). An
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
export function sealEvent(place: EventPlace, data: Record<string, unknown>, key: KeyObject): Record<string, unknown> {
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
  key: KeyObject | null,
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
  return restorePersonal(clear, parseJsonText(text) as [Location, unknown][]);
}

/**
 * The person a new stream's data belongs to, for its data key (null: none, the stream gets no key), given its name and
 * first event. The command layer knows the stream kinds and supplies it (src/domain/streams.ts).
 */
export type PersonOfStream = (
  streamId: string,
  first: { type: string; data: Record<string, unknown> } | undefined,
) => string | null;

/** The key derivations of the derived stored formats (`s1:` seeds, `s2:` nonces). */
type DerivedFormats = Pick<SecretBox, 'personKeySeeds' | 'personKeyNonces'>;

/** Keys kept at most: past it the cache starts over (unwrapping one again is one AES-GCM open). */
const CACHE_LIMIT = 20_000;
const KEY_BYTES = 32;

/**
 * Makes and reads the stream data keys of `personal_data_keys`, whose `wrapped_key` holds each key in one format:
 * 32 random bytes sealed with the `person-key` box (`v2:`, AES-256-GCM under that purpose's key). Without
 * SECRET_ENCRYPTION_KEY a row opens nothing, and once it is deleted nothing gives the key back, which is all
 * crypto-shredding needs. (Rows of the derived formats `s1:`/`s2:` are rewritten into this one at start-up,
 * person-key-rows.ts; an import of an export that carries them converts them, `inOneFormat`.)
 * The cache maps a stored value, as read from personal_data_keys together with the events, to its key; it is never
 * asked for a stream's key by name. Every read of events reads the stream's key row in the same statement, so once
 * an erasure has committed no process finds a stored value to look up, whatever its cache holds: a cache entry
 * cannot outlive an erasure.
 */
export class PersonalDataKeys {
  // KeyObjects, made once per key: Node 24 takes a Buffer as an AES key the slow way (16 µs a cipher against 4 µs; a
  // replay opens every sealed event of the log, and a capture seals twice: bench/million.ts, bench:leads).
  private readonly keys = new Map<string, KeyObject>();

  private readonly box: PurposeBox;
  private readonly derived?: DerivedFormats;
  constructor(
    box: PurposeBox,
    /** The derivations of the `s1:`/`s2:` formats, for `inOneFormat` only. */
    derived?: DerivedFormats,
  ) {
    this.box = box;
    this.derived = derived;
  }

  /** The keys made and read with a SecretBox's person-key box. */
  static of<T extends PersonalDataKeys>(
    this: new (box: PurposeBox, derived?: DerivedFormats) => T,
    secrets: Pick<SecretBox, 'personKeys'> & DerivedFormats,
  ): T {
    return new this(secrets.personKeys, secrets);
  }

  /**
   * A stored value in the one format: a value of a derived format (`s1:` seed, `s2:` nonce; rows and exports
   * written before wrapped keys) becomes its key wrapped; any other is returned as it is.
   */
  inOneFormat(stored: string): string {
    if (!/^s[12]:/.test(stored)) return stored;
    if (!this.derived) throw new Error('A derived personal data key, and no derivation to read it');
    const bytes = Buffer.from(stored.slice(3), 'base64');
    const key =
      stored.startsWith('s1:') && bytes.length === 16
        ? this.derived.personKeySeeds.derive(bytes)
        : stored.startsWith('s2:') && bytes.length === KEY_NONCE_BYTES
          ? this.derived.personKeyNonces.derive(bytes)
          : undefined;
    if (!key) throw new Error('A derived personal data key of the wrong length');
    return this.box.seal(key.toString('base64'));
  }

  /** A new data key and what its key row stores (the key, wrapped). */
  newKey(): { key: KeyObject; stored: string } {
    const bytes = randomFromPool(KEY_BYTES);
    return { key: createSecretKey(bytes), stored: this.box.seal(bytes.toString('base64')) };
  }

  /** The data key a key row's stored value wraps. */
  keyOf(stored: string): KeyObject {
    const cached = this.keys.get(stored);
    if (cached) return cached;
    const bytes = Buffer.from(this.box.open(stored), 'base64');
    if (bytes.length !== KEY_BYTES) throw new Error('A personal data key is not 32 bytes');
    const key = createSecretKey(bytes);
    if (this.keys.size >= CACHE_LIMIT) this.keys.clear();
    this.keys.set(stored, key);
    return key;
  }

  /** For tests: how many keys the cache holds. */
  get cached(): number {
    return this.keys.size;
  }
}
