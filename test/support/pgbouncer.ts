import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import type { Test } from 'tap';
import { freePort } from '../../src/storage/embedded-postgres.js';
import { newTestDatabase, serverUrl } from './db.js';

/** How long start() waits for the pooler to answer on its admin console. */
const START_DEADLINE_MS = 15_000;

const PGBOUNCER = ['/usr/sbin/pgbouncer', '/usr/bin/pgbouncer'].find((p) => existsSync(p));

/**
 * Why the connection-pooler suites cannot run here, or false. CI installs Debian's pgbouncer (.ci/run), so there a
 * missing one fails the run; elsewhere those suites are skipped with this reason.
 */
export function pgbouncerSkipReason(): string | false {
  if (PGBOUNCER || process.env.CI) return false;
  return 'no pgbouncer: install Debian pgbouncer (apt-get install pgbouncer) to run the connection-pooler suites';
}

/**
 * A private PgBouncer in transaction pooling mode in front of the suites' PostgreSQL (DATABASE_URL's host and port,
 * every database by name), listening on a free loopback port with its own configuration in a temporary folder.
 * Named prepared statements are not tracked (1.18 cannot; `max_prepared_statements` stays unset on later versions).
 */
export class TestPgBouncer {
  readonly folder = mkdtempSync(path.join(os.tmpdir(), 'vcrm-pgbouncer-'));
  private child: ChildProcess | undefined;

  readonly port: number;
  private readonly user: string;
  private constructor(port: number, user: string) {
    this.port = port;
    this.user = user;
  }

  /** `poolSize`: server connections per database and user (default_pool_size); few, so sessions are shared. */
  static async start(options: { poolSize?: number; server?: string } = {}): Promise<TestPgBouncer> {
    if (!PGBOUNCER) throw new Error('pgbouncer is not installed (apt-get install pgbouncer)');
    const server = new URL(options.server ?? serverUrl());
    const user = decodeURIComponent(server.username) || 'postgres';
    const bouncer = new TestPgBouncer(await freePort(), user);
    bouncer.writeConfig(server, options.poolSize ?? 4);
    await bouncer.run();
    return bouncer;
  }

  /** A connection URL through the pooler to this database of the server. */
  url(database: string): string {
    return `postgres://${encodeURIComponent(this.user)}@127.0.0.1:${this.port}/${database}`;
  }

  /** The server process ids of the pooler's connections to a database (its admin console's SHOW SERVERS). */
  async serverPids(database: string): Promise<number[]> {
    const rows = await this.admin<{ database: string; remote_pid: string }>('SHOW SERVERS');
    return rows.filter((r) => r.database === database).map((r) => Number(r.remote_pid));
  }

  private async admin<R extends pg.QueryResultRow>(command: string): Promise<R[]> {
    const client = new pg.Client({ connectionString: this.url('pgbouncer') });
    await client.connect();
    try {
      return (await client.query<R>(command)).rows;
    } finally {
      await client.end();
    }
  }

  private writeConfig(server: URL, poolSize: number): void {
    const password = decodeURIComponent(server.password);
    const quoted = (text: string) => `"${text.replaceAll('"', '""')}"`;
    // trust: the pooler checks no client password; the userlist still names the user, and holds the password the
    // pooler gives the server when it asks for one.
    writeFileSync(path.join(this.folder, 'userlist.txt'), `${quoted(this.user)} ${quoted(password)}\n`, {
      mode: 0o600,
    });
    const lines = [
      '[databases]',
      `* = host=${server.hostname.replace(/^\[|\]$/g, '')} port=${server.port || 5432}`,
      '',
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${this.port}`,
      'unix_socket_dir =',
      'auth_type = trust',
      `auth_file = ${path.join(this.folder, 'userlist.txt')}`,
      `admin_users = ${this.user}`,
      'pool_mode = transaction',
      `default_pool_size = ${poolSize}`,
      'max_client_conn = 500',
      `logfile = ${path.join(this.folder, 'pgbouncer.log')}`,
    ];
    // PgBouncer refuses to run as root: as root (CI), it switches to the postgres user, which must own its folder.
    if (process.getuid?.() === 0) lines.push('user = postgres');
    writeFileSync(path.join(this.folder, 'pgbouncer.ini'), `${lines.join('\n')}\n`);
    if (process.getuid?.() === 0) {
      const [uid, gid] = ['-u', '-g'].map((flag) => Number(spawnSync('id', [flag, 'postgres']).stdout.toString()));
      for (const file of ['', 'userlist.txt', 'pgbouncer.ini']) chownSync(path.join(this.folder, file), uid!, gid!);
    }
  }

  private async run(): Promise<void> {
    // pgbouncer runs under a small shell that stops it when our end of its stdin closes: when close() ends it, and
    // also when the test process is killed, so no pooler outlives its test.
    const child = spawn(
      '/bin/sh',
      ['-c', '"$1" "$2" & c=$!; read _ignored; kill $c; wait $c', 'pgbouncer-guard', PGBOUNCER!, this.iniFile],
      { stdio: ['pipe', 'ignore', 'ignore'] },
    );
    this.child = child;
    const deadline = Date.now() + START_DEADLINE_MS;
    let last: unknown;
    while (Date.now() < deadline) {
      if (child.exitCode !== null) break;
      try {
        await this.admin('SHOW VERSION');
        return;
      } catch (error) {
        last = error;
        await new Promise((r) => setTimeout(r, 50));
      }
    }
    await this.close();
    throw new Error(`pgbouncer did not start (${String(last)}); its log ends:\n${this.logTail()}`);
  }

  private get iniFile(): string {
    return path.join(this.folder, 'pgbouncer.ini');
  }

  private logTail(): string {
    const file = path.join(this.folder, 'pgbouncer.log');
    return existsSync(file) ? readFileSync(file, 'utf8').split('\n').slice(-15).join('\n') : '(no log written)';
  }

  async close(): Promise<void> {
    const child = this.child;
    if (child && child.exitCode === null) {
      await new Promise<void>((resolve) => {
        child.once('exit', () => resolve());
        child.stdin?.end();
      });
    }
    rmSync(this.folder, { recursive: true, force: true });
  }
}

/** A pooler for one test, closed at its teardown. */
export async function startPgBouncer(t: Test, options: { poolSize?: number } = {}): Promise<TestPgBouncer> {
  const bouncer = await TestPgBouncer.start(options);
  t.teardown(() => bouncer.close());
  return bouncer;
}

/**
 * A new database on the suites' server, not migrated (the service under test migrates it), dropped at teardown.
 * Returns its name and its direct URL.
 */
export async function databaseForPooler(t: Test): Promise<{ name: string; directUrl: string }> {
  // Dropped as every file's database (test/support/db.ts): a forced drop at once ended the service's connections
  // still closing after its pool had ended, and tap reported their FATAL 57P01 as the test's failure (2026-11-30).
  const { name, url, drop } = await newTestDatabase(serverUrl());
  t.teardown(drop);
  return { name, directUrl: url };
}
