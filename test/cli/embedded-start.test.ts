import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { cliArgs, runCli, toolEnv } from '../support/cli.js';

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** `visa-crm serve` in a process group of its own, stopped as Ctrl-C does (SIGINT to the group) once it listens. */
function serveUntilCtrlC(env: Record<string, string>): Promise<{ code: number | null; stderr: string; lock: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...cliArgs(), 'serve'], {
      env: { ...toolEnv(), DATABASE_URL: '', PORT: '0', LOG_LEVEL: 'info', ...env },
      stdio: ['ignore', 'ignore', 'pipe'],
      detached: true,
    });
    let stderr = '';
    let lock = '';
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
      if (!lock && /Server listening/.test(stderr)) {
        lock = fs.readFileSync(path.join(env.DATA_DIR!, 'instance.lock'), 'utf8');
        process.kill(-child.pid!, 'SIGINT');
      }
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stderr, lock }));
  });
}

t.test('the embedded PostgreSQL as root: a folder postgres cannot enter, a fixed port, Ctrl-C', async (t) => {
  if (process.getuid?.() !== 0) {
    t.comment('not root: the server runs as this user, so there is no other user to let in');
    return;
  }
  // What `mktemp -d` makes: mode 700, owner root.
  const outer = fs.mkdtempSync(path.join(os.tmpdir(), 'vcrm-root-'));
  t.teardown(() => fs.rmSync(outer, { recursive: true, force: true }));
  t.equal(fs.statSync(outer).mode & 0o777, 0o700);
  const dataDir = path.join(outer, 'data');

  const refused = await runCli('', ['workspace', 'list'], { DATA_DIR: dataDir });
  t.equal(refused.code, 1);
  t.equal(
    refused.stderr,
    `The embedded PostgreSQL runs as the user postgres (PostgreSQL refuses to run as root), which cannot enter ${outer} (mode 700). Let it in with \`chmod o+x ${outer}\`, or set DATA_DIR to a folder outside it, or DATABASE_URL to a PostgreSQL server of your own.\n`,
    'says exactly what to do, not initdb',
  );

  fs.chmodSync(outer, 0o701); // what the message says to do
  const port = await freePort();
  const served = await serveUntilCtrlC({ DATA_DIR: dataDir, EMBEDDED_PG_PORT: String(port) });
  t.equal(served.code, 0, 'starts once postgres can enter, and exits 0 on Ctrl-C');
  t.equal((JSON.parse(served.lock) as { port: number }).port, port, 'the embedded server listens on EMBEDDED_PG_PORT');
  const lines = served.stderr
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as { level: number; msg: string });
  t.equal(lines.at(-1)?.msg, 'stopped');
  t.same(
    lines.filter((l) => l.level >= 40).map((l) => l.msg),
    [],
    'Ctrl-C reaches the service, not the database under it: no warning, no stack trace before "stopped"',
  );

  const badPort = await runCli('', ['workspace', 'list'], { DATA_DIR: dataDir, EMBEDDED_PG_PORT: 'x' });
  t.equal(badPort.code, 1);
  t.equal(badPort.stderr, 'EMBEDDED_PG_PORT must be a port number from 1 to 65535, got "x"\n');
});
