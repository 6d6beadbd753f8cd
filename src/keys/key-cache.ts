import pg from 'pg';
import type { Queryable } from '../storage/postgres.js';
import type { KeyLookup } from './repository.js';

/** Channel on which a revocation, a suspension or a workspace change tells every API process to drop cached keys. */
export const AUTH_CHANNEL = 'auth_changed';

/** NOTIFY payload prefix of a key creation: other processes drop their "unknown" entry for that key's hash. */
const KEY_CREATED = 'key_created:';

const inProcess = new Set<KeyLookupCache>();

const MAX_CACHED_ORIGIN = 300;

/** Whether some public key allows an origin, and when the last such key expires (ms; null when one never does). */
export interface OriginAllowance {
  allowed: boolean;
  allowedUntil: number | null;
}

/** Tells every process (NOTIFY) and this one (at once) that cached key lookups may be stale. */
export async function announceAuthChange(sql: Queryable): Promise<void> {
  await sql.query(`SELECT pg_notify('${AUTH_CHANNEL}', '')`);
  for (const cache of inProcess) cache.clear();
}

/**
 * Tells every process that a key with this hash (the cache id, base64 of its SHA-256) now exists, so a cached
 * "unknown" answer for it goes: in this process at once, in others when the creating transaction commits.
 */
export async function announceKeyCreated(sql: Queryable, cacheId: string): Promise<void> {
  for (const cache of inProcess) cache.forgetUnknown(cacheId);
  await sql.query('SELECT pg_notify($1, $2)', [AUTH_CHANNEL, KEY_CREATED + cacheId]);
}

/**
 * Key lookups by hash, kept briefly so a request does not pay a database round trip to authenticate. Entries go on
 * any auth change (revocation, suspension, workspace update) announced in this process or through NOTIFY, and
 * after `ttlMs` at the latest, which bounds staleness should a notification be lost.
 *
 * Hashes that named no key are kept too (`unknownTtlMs`, at most `maxUnknown` of them, the oldest dropped first), so
 * a client repeating a wrong key costs no lookups. A key's value exists nowhere before its creation generates it, so
 * no "unknown" entry can normally name a new key; should one, the creation drops it here at once and in other
 * processes on its NOTIFY, and `unknownTtlMs` bounds it if that notification were lost. A lookup that began before a
 * drop does not store its "unknown" answer afterwards.
 *
 * CORS preflights are answered from here too: per origin, whether some public key allows it, kept like unknown keys
 * (`unknownTtlMs`, at most `maxUnknown` origins) and dropped on the same changes and on every key creation.
 */
export class KeyLookupCache {
  private readonly entries = new Map<string, { lookup: KeyLookup; until: number }>();
  private readonly unknown = new Map<string, number>();
  /** Preflight answers per origin: whether some public key allows it, and until when (service clock, ms; null: no end). */
  private readonly origins = new Map<string, { allowed: boolean; allowedUntil: number | null; until: number }>();
  /** Moves on every drop, so an "unknown" answer read before it is not stored after it. */
  private generation = 0;
  private listener: pg.Client | undefined;
  private closed = false;
  readonly clear = (): void => {
    this.entries.clear();
    this.unknown.clear();
    this.origins.clear();
    this.generation++;
  };

  constructor(
    private readonly ttlMs = 5_000,
    private readonly maxEntries = 10_000,
    private readonly clock: () => number = Date.now,
    private readonly unknownTtlMs = 5_000,
    private readonly maxUnknown = 10_000,
  ) {
    inProcess.add(this);
  }

  get(hash: string): KeyLookup | undefined {
    const entry = this.entries.get(hash);
    if (!entry) return undefined;
    if (entry.until <= this.clock()) {
      this.entries.delete(hash);
      return undefined;
    }
    return entry.lookup;
  }

  set(hash: string, lookup: KeyLookup): void {
    if (this.entries.size >= this.maxEntries) this.entries.clear();
    this.entries.set(hash, { lookup, until: this.clock() + this.ttlMs });
  }

  /** The current generation: pass it to `setUnknown` with the answer of a lookup that started now. */
  get version(): number {
    return this.generation;
  }

  /** Whether this hash was recently looked up and named no key. */
  isUnknown(hash: string): boolean {
    const until = this.unknown.get(hash);
    if (until === undefined) return false;
    if (until <= this.clock()) {
      this.unknown.delete(hash);
      return false;
    }
    return true;
  }

  /** Remembers that this hash named no key, unless a drop happened since the lookup began (`version` then). */
  setUnknown(hash: string, version: number): void {
    if (version !== this.generation) return;
    this.unknown.delete(hash);
    while (this.unknown.size >= this.maxUnknown) this.unknown.delete(this.unknown.keys().next().value!);
    this.unknown.set(hash, this.clock() + this.unknownTtlMs);
  }

  forgetUnknown(hash: string): void {
    this.unknown.delete(hash);
    // The new key may be a public key allowing an origin that was refused until now.
    this.origins.clear();
    this.generation++;
  }

  /**
   * The cached preflight answer for an origin: true when a public key allowed it (and, at `now` on the service's
   * clock, the last of those keys has not expired), false when none did, undefined when not known.
   */
  originAllowed(origin: string, now: number): boolean | undefined {
    const entry = this.origins.get(origin);
    if (!entry) return undefined;
    if (entry.until <= this.clock() || (entry.allowedUntil !== null && entry.allowedUntil <= now)) {
      this.origins.delete(origin);
      return undefined;
    }
    return entry.allowed;
  }

  /** Remembers a preflight answer (as `setUnknown`, unless a drop happened since the lookup began). */
  setOriginAllowed(origin: string, answer: OriginAllowance, version: number): void {
    // An origin is at most a scheme, a 253-character host name and a port; a longer one is not kept, so 10,000
    // entries stay a few megabytes however long the Origin headers sent (it is still throttled per address).
    if (version !== this.generation || origin.length > MAX_CACHED_ORIGIN) return;
    this.origins.delete(origin);
    while (this.origins.size >= this.maxUnknown) this.origins.delete(this.origins.keys().next().value!);
    this.origins.set(origin, { ...answer, until: this.clock() + this.unknownTtlMs });
  }

  /** Follows AUTH_CHANNEL on its own connection, reconnecting after a loss (the cache is dropped meanwhile). */
  async listen(connectionString: string): Promise<void> {
    if (this.closed) return;
    const client = new pg.Client({ connectionString });
    const reconnect = () => {
      this.clear();
      if (this.listener === client) this.listener = undefined;
      client.end().catch(() => undefined);
      if (!this.closed) setTimeout(() => void this.listen(connectionString).catch(() => undefined), 1000).unref();
    };
    client.on('notification', (message) => {
      if (message.payload?.startsWith(KEY_CREATED)) this.forgetUnknown(message.payload.slice(KEY_CREATED.length));
      else this.clear();
    });
    client.on('error', reconnect);
    try {
      await client.connect();
      await client.query(`LISTEN ${AUTH_CHANNEL}`);
      this.listener = client;
      // A change may have been missed while connecting.
      this.clear();
    } catch {
      reconnect();
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    inProcess.delete(this);
    this.clear();
    await this.listener?.end().catch(() => undefined);
  }
}
