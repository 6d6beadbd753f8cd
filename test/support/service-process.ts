import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { cliArgs, toolEnv } from './cli.js';

const ROOT = path.resolve(import.meta.dirname, '../..');

/** `visa-crm serve` running as a process of its own, listening on 127.0.0.1. */
export interface ServiceProcess {
  child: ChildProcess;
  baseUrl: string;
  /** Its exit code once it has exited. */
  exited: Promise<number | null>;
}

/** Starts `visa-crm serve` with `env`; resolves once it listens, rejects with its last log if it exits first. */
export function startServiceProcess(env: NodeJS.ProcessEnv): Promise<ServiceProcess> {
  const child = spawn(process.execPath, [...cliArgs(), 'serve'], {
    cwd: ROOT,
    env: toolEnv(env),
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  let log = '';
  return new Promise((resolve, reject) => {
    child.stderr!.on('data', (d: Buffer) => {
      log += d.toString();
      const match = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(log);
      if (match) resolve({ child, baseUrl: match[1]!, exited });
    });
    void exited.then(() => reject(new Error(`the service process exited early: ${log.slice(-2000)}`)));
  });
}
