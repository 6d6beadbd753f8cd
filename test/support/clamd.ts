import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ClamdScanner } from '../../src/documents/clamd.js';

/** The marker the test signature database flags anywhere in a file: a test "virus" that fits inside a real PDF. */
export const TEST_MALWARE_MARKER = 'VISA-CRM-TEST-MALWARE-7d1f0c2a';
/** The EICAR anti-virus test file (68 bytes), flagged by its MD5 in the test database. */
export const EICAR = String.raw`X5O!P%@AP[4\PZX54(P^)7CC)7}$EICAR-STANDARD-ANTIVIRUS-TEST-FILE!$H+H*`;

/** How long start() waits for the daemon to answer PING (it loads the two-signature test database in well under 1 s). */
const START_DEADLINE_MS = 20_000;

const CLAMD = ['/usr/sbin/clamd', '/usr/bin/clamd'].find((p) => spawnSync('test', ['-x', p]).status === 0);

/**
 * Why the ClamAV suites cannot run here, or false. CI installs clamav-daemon (.ci/run), so there a missing daemon
 * fails the run; elsewhere those suites are skipped with this reason.
 */
export function clamdSkipReason(): string | false {
  if (CLAMD || process.env.CI) return false;
  return 'no clamd: install Debian clamav-daemon (apt-get install clamav-daemon) to run the virus-scan suites';
}

/**
 * A real ClamAV daemon on a unix socket in a temporary folder, with a signature database the test writes (signature
 * updates cannot be fetched here): the EICAR test file by its hash, and TEST_MALWARE_MARKER anywhere in a file.
 * `stop()` takes it away and `start()` brings it back on the same socket.
 */
export class TestClamd {
  readonly folder = mkdtempSync(path.join(os.tmpdir(), 'vcrm-clamd-'));
  readonly socket = path.join(this.folder, 'clamd.sock');
  private child: ChildProcess | undefined;

  get address(): string {
    return `unix:${this.socket}`;
  }

  /** `streamMaxLength`: clamd's StreamMaxLength (25M unless given); past it clamd answers INSTREAM with an ERROR. */
  static async start(options: { streamMaxLength?: string } = {}): Promise<TestClamd> {
    if (!CLAMD) throw new Error('clamd is not installed (apt-get install clamav-daemon)');
    const clamd = new TestClamd();
    clamd.writeConfig(options.streamMaxLength ?? '25M');
    await clamd.start();
    return clamd;
  }

  private writeConfig(streamMaxLength: string): void {
    const db = path.join(this.folder, 'db');
    spawnSync('mkdir', ['-p', db]);
    const hex = Buffer.from(TEST_MALWARE_MARKER).toString('hex');
    writeFileSync(path.join(db, 'test.ndb'), `VisaCrm.Test.Marker:0:*:${hex}\n`);
    const eicarMd5 = spawnSync('md5sum', { input: EICAR }).stdout.toString().split(' ')[0];
    writeFileSync(path.join(db, 'test.hdb'), `${eicarMd5}:${EICAR.length}:Eicar-Test-Signature\n`);
    writeFileSync(
      path.join(this.folder, 'clamd.conf'),
      [
        'Foreground yes',
        `LocalSocket ${this.socket}`,
        `DatabaseDirectory ${db}`,
        `TemporaryDirectory ${this.folder}`,
        `LogFile ${path.join(this.folder, 'clamd.log')}`,
        `StreamMaxLength ${streamMaxLength}`,
        // Root runs the tests on CI; clamd keeps the user it was started as when none is configured.
        '',
      ].join('\n'),
    );
  }

  async start(): Promise<void> {
    // clamd runs under a small shell that stops it when our end of its stdin closes: when stop() ends it, and also
    // when the test process is killed (a timed-out suite), so no daemon outlives its test.
    this.child = spawn(
      '/bin/sh',
      [
        '-c',
        'clamd -c "$1" & c=$!; read _ignored; kill $c; wait $c',
        'clamd-guard',
        path.join(this.folder, 'clamd.conf'),
      ],
      {
        stdio: ['pipe', 'ignore', 'ignore'],
        env: { ...process.env, PATH: `${path.dirname(CLAMD!)}:${process.env.PATH ?? ''}` },
      },
    );
    // A wall-clock deadline, each PING bounded by what is left of it: a daemon that accepts and does not answer
    // (still loading, or wedged) fails the start within the deadline instead of holding the suite to tap's timeout.
    const deadline = Date.now() + START_DEADLINE_MS;
    const scanner = new ClamdScanner({ path: this.socket });
    while (Date.now() < deadline) {
      if (await scanner.ping(Math.max(1, Math.min(2_000, deadline - Date.now())))) return;
      if (this.child.exitCode !== null) throw new Error(`clamd exited with ${this.child.exitCode}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    const log = readLog(path.join(this.folder, 'clamd.log'));
    throw new Error(`clamd did not answer PING within ${START_DEADLINE_MS / 1000} s; its log ends:\n${log}`);
  }

  async stop(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      child.once('exit', () => resolve());
      child.stdin?.end();
    });
    rmSync(this.socket, { force: true });
  }

  async close(): Promise<void> {
    await this.stop();
    rmSync(this.folder, { recursive: true, force: true });
  }
}

/** A small real PDF; `extra` is written inside it (as a comment), so the marker can ride in a valid file. */
export function pdfFile(extra = ''): Buffer {
  return Buffer.from(
    `%PDF-1.4\n%${extra}\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n2 0 obj << /Type /Pages /Kids [] /Count 0 >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n`,
  );
}

/** A 1×1 PNG. */
export const PNG_FILE = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==',
  'base64',
);

/** The last lines of clamd's log, for a start that failed. */
function readLog(file: string): string {
  if (!existsSync(file)) return '(no log written)';
  return readFileSync(file, 'utf8').split('\n').slice(-15).join('\n');
}
