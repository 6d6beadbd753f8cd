import pg from 'pg';
import type { Queryable } from '../storage/postgres.js';
import type { KeyLookup } from './repository.js';

/** Channel on which a revocation, a suspension or a workspace change tells every API process to drop cached keys. */
export const AUTH_CHANNEL = 'auth_changed';

const inProcess = new Set<() => void>();

/** Tells every process (NOTIFY) and this one (at once) that cached key lookups may be stale. */
export async function announceAuthChange(sql: Queryable): Promise<void> {
  await sql.query(`SELECT pg_notify('${AUTH_CHANNEL}', '')`);
  for (const clear of inProcess) clear();
}

/**
 * Key lookups by hash, kept briefly so a request does not pay a database round trip to authenticate. Entries go on
 * any auth change (revocation, suspension, workspace update) announced in this process or through NOTIFY, and
 * after `ttlMs` at the latest, which bounds staleness should a notification be lost. Unknown keys are not cached.
 */
export class KeyLookupCache {
  private readonly entries = new Map<string, { lookup: KeyLookup; until: number }>();
  private listener: pg.Client | undefined;
  private closed = false;
  private readonly clear = () => this.entries.clear();

  constructor(
    private readonly ttlMs = 5_000,
    private readonly maxEntries = 10_000,
    private readonly clock: () => number = Date.now,
  ) {
    inProcess.add(this.clear);
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
    client.on('notification', this.clear);
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
    inProcess.delete(this.clear);
    this.clear();
    await this.listener?.end().catch(() => undefined);
  }
}
