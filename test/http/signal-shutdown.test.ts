import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { cliArgs, toolEnv } from '../support/cli.js';

const ROOT = path.resolve(import.meta.dirname, '../..');

function cli(env: NodeJS.ProcessEnv, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...cliArgs(), '--json', ...args], {
      cwd: ROOT,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`visa-crm ${args.join(' ')}: ${err}`))));
  });
}

t.test(
  'SIGTERM lets the request in flight finish against the embedded database, then stops it and frees the data folder',
  async (t) => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'vcrm-shutdown-'));
    fs.chmodSync(dataDir, 0o755);
    t.teardown(() => fs.rmSync(dataDir, { recursive: true, force: true }));
    const env: NodeJS.ProcessEnv = {
      ...toolEnv(),
      DATA_DIR: dataDir,
      PORT: '0',
      LOG_LEVEL: 'info',
      RUN_WORKERS: 'false',
    };
    delete env.DATABASE_URL;
    delete env.SECRET_ENCRYPTION_KEY;

    const server: ChildProcess = spawn(process.execPath, [...cliArgs(), 'serve'], {
      cwd: ROOT,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    t.teardown(() => server.kill('SIGKILL'));
    let log = '';
    const exited = new Promise<number | null>((resolve) => server.on('exit', (code) => resolve(code)));
    // The service logs on stderr (stdout is kept for a command's own output).
    const baseUrl = await new Promise<string>((resolve, reject) => {
      server.stderr!.on('data', (d: Buffer) => {
        log += d.toString();
        const match = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(log);
        if (match) resolve(match[1]!);
      });
      void exited.then(() => reject(new Error(`the service exited early: ${log}`)));
    });

    // The CLI joins the running embedded server through the data folder.
    await cli(env, ['workspace', 'apply', 'definitions/demo-workspace.json']);
    const { key } = JSON.parse(await cli(env, ['key', 'create', 'demo', '--mode', 'test'])) as { key: string };

    const body = JSON.stringify({ full_name: 'Late Arrival', email: 'late@example.com', consent: true });
    const port = Number(new URL(baseUrl).port);
    const answer = new Promise<{ status: number; body: string }>((resolve, reject) => {
      const request = http.request(
        {
          host: '127.0.0.1',
          port,
          method: 'POST',
          path: '/v1/leads',
          headers: {
            authorization: `Bearer ${key}`,
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(body),
          },
        },
        (response) => {
          let text = '';
          response.on('data', (d: Buffer) => (text += d.toString()));
          response.on('end', () => resolve({ status: response.statusCode ?? 0, body: text }));
        },
      );
      request.on('error', reject);
      // Half the body now; the rest after the signal, so the request is in flight when shutdown starts.
      request.write(body.slice(0, 20));
      setTimeout(() => {
        server.kill('SIGTERM');
        setTimeout(() => request.end(body.slice(20)), 500);
      }, 300);
    });

    const result = await answer;
    t.equal(result.status, 201, `the request in flight was answered: ${result.body}`);
    t.equal(await exited, 0, 'the service then exited cleanly');
    t.match(log, /shutting down/);
    t.match(log, /"msg":"stopped"/, 'after stopping its database');
    t.notOk(fs.existsSync(path.join(dataDir, 'instance.lock')), 'the data folder is free again');
  },
);
