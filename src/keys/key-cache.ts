import pg from 'pg';
import type { Queryable } from '../storage/postgres.js';
import type { KeyLookup } from './repository.js';

/** Channel on which a revocation, a suspension or a workspace change tells every API process to drop cached keys. */
export const AUTH_CHANNEL = 'auth_changed';

/** NOTIFY payload prefix of a key creation: other processes add that key's hash to the hashes they know. */
const KEY_CREATED = 'key_created:';

const inProcess = new Set<KeyLookupCache>();

const MAX_CACHED_ORIGIN = 300;

/** The listener's application_name, by which operators (and tests) find its connection in pg_stat_activity. */
export const LISTENER_NAME = 'visa-crm auth listener';

/** How often a listening process reads every key's hash again, in case a notification was lost unnoticed. */
const KNOWN_REFRESH_MS = 60_000;

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
 * Tells every process that a key with this hash (the cache id, base64 of its SHA-256) now exists: in this process at
 * once, in others when the creating transaction commits.
 */
export async function announceKeyCreated(sql: Queryable, cacheId: string): Promise<void> {
  for (const cache of inProcess) cache.keyCreated(cacheId);
  await sql.query('SELECT pg_notify($1, $2)', [AUTH_CHANNEL, KEY_CREATED + cacheId]);
}

/**
 * Key lookups by hash, kept briefly so a request does not pay a database round trip to authenticate. Entries go on
 * any auth change (revocation, suspension, workspace update) announced in this process or through NOTIFY, and
 * after `ttlMs` at the latest, which bounds staleness should a notification be lost.
 *
 * Beside them, the hash of every key that exists (revoked and expired ones too: keys are never deleted), read once
 * and kept current by the creation notices, so a value that names no key is refused without a lookup, whoever sends
 * it and however often (docs/decisions.md, "Authentication that no neighbour can spoil"). A listening process reads them all again whenever its
 * listener (re)connects and every minute, which bounds a lost notice; hashes are only ever added, so a reading that
 * overlaps a creation cannot drop it.
 *
 * CORS preflights are answered from here too: per origin, whether some public key allows it, kept for
 * `originTtlMs` (at most `maxOrigins` origins) and dropped on the same changes and on every key creation.
 */
export class KeyLookupCache {
  private readonly entries = new Map<string, { lookup: KeyLookup; until: number }>();
  /** Cache ids of every existing key; complete once `loaded` has resolved. */
  private readonly known = new Set<string>();
  private loaded: Promise<void> | undefined;
  /** Preflight answers per origin: whether some public key allows it, and until when (service clock, ms; null: no end). */
  private readonly origins = new Map<string, { allowed: boolean; allowedUntil: number | null; until: number }>();
  /** Moves on every drop, so an origin's answer read before it is not stored after it. */
  private generation = 0;
  private listener: pg.Client | undefined;
  private refreshTimer: NodeJS.Timeout | undefined;
  private closed = false;
  readonly clear = (): void => {
    this.entries.clear();
    this.origins.clear();
    this.generation++;
  };

  private readonly ttlMs;
  private readonly maxEntries;
  private readonly clock: () => number;
  private readonly originTtlMs;
  private readonly maxOrigins;
  constructor(
    ttlMs = 5_000,
    maxEntries = 10_000,
    clock: () => number = Date.now,
    originTtlMs = 5_000,
    maxOrigins = 10_000,
  ) {
    this.ttlMs = ttlMs;
    this.maxEntries = maxEntries;
    this.clock = clock;
    this.originTtlMs = originTtlMs;
    this.maxOrigins = maxOrigins;
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

  /** The current generation: pass it to `setOriginAllowed` with the answer of a lookup that started now. */
  get version(): number {
    return this.generation;
  }

  /** Whether some key has this hash; the first call reads every key's hash (through `sql`) unless the listener did. */
  async exists(sql: Queryable, hash: string): Promise<boolean> {
    this.loaded ??= this.readKnown(sql).catch((error: unknown) => {
      this.loaded = undefined;
      throw error;
    });
    await this.loaded;
    return this.known.has(hash);
  }

  /** How many key hashes this process knows. */
  get knownCount(): number {
    return this.known.size;
  }

  keyCreated(hash: string): void {
    this.known.add(hash);
    // The new key may be a public key allowing an origin that was refused until now.
    this.origins.clear();
    this.generation++;
  }

  private async readKnown(sql: Queryable): Promise<void> {
    const result = await sql.query<{ hash: Buffer }>('SELECT hash FROM api_keys');
    for (const row of result.rows) this.known.add(row.hash.toString('base64'));
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

  /** Remembers a preflight answer, unless a drop happened since the lookup began (`version` then). */
  setOriginAllowed(origin: string, answer: OriginAllowance, version: number): void {
    // An origin is at most a scheme, a 253-character host name and a port; a longer one is not kept, so 10,000
    // entries stay a few megabytes however long the Origin headers sent (it is still throttled per address).
    if (version !== this.generation || origin.length > MAX_CACHED_ORIGIN) return;
    this.origins.delete(origin);
    while (this.origins.size >= this.maxOrigins) this.origins.delete(this.origins.keys().next().value!);
    this.origins.set(origin, { ...answer, until: this.clock() + this.originTtlMs });
  }

  /**
   * Follows AUTH_CHANNEL on its own connection, reconnecting after a loss (the cache is dropped meanwhile), and reads
   * every key's hash once listening, then every minute on that connection.
   */
  async listen(connectionString: string): Promise<void> {
    if (this.closed) return;
    const client = new pg.Client({ connectionString, keepAlive: true, application_name: LISTENER_NAME });
    const reconnect = () => {
      this.clear();
      if (this.listener === client) this.listener = undefined;
      clearInterval(this.refreshTimer);
      client.end().catch(() => undefined);
      if (!this.closed) setTimeout(() => void this.listen(connectionString).catch(() => undefined), 1000).unref();
    };
    client.on('notification', (message) => {
      if (message.payload?.startsWith(KEY_CREATED)) this.keyCreated(message.payload.slice(KEY_CREATED.length));
      else this.clear();
    });
    client.on('error', reconnect);
    try {
      await client.connect();
      await client.query(`LISTEN ${AUTH_CHANNEL}`);
      this.listener = client;
      // A change may have been missed while connecting; the hashes are read once the notices are followed.
      this.clear();
      await this.readKnown(client);
      this.loaded ??= Promise.resolve();
      clearInterval(this.refreshTimer);
      this.refreshTimer = setInterval(() => void this.readKnown(client).catch(() => undefined), KNOWN_REFRESH_MS);
      this.refreshTimer.unref();
    } catch {
      reconnect();
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    inProcess.delete(this);
    clearInterval(this.refreshTimer);
    this.clear();
    await this.listener?.end().catch(() => undefined);
  }
}
