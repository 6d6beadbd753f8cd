import { spawn } from 'node:child_process';
import path from 'node:path';
import { TEST_ENCRYPTION_KEY } from './app.js';

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the real command-line tool (from source, through tsx) against the given database. */
export function runCli(databaseUrl: string, args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', path.resolve('src/cli/main.ts'), ...args], {
      env: {
        ...process.env,
        DATABASE_URL: databaseUrl,
        SECRET_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY,
        LOG_LEVEL: 'silent',
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? 1, stdout, stderr }));
  });
}

export async function runCliJson<T>(databaseUrl: string, args: string[]): Promise<T> {
  const result = await runCli(databaseUrl, ['--json', ...args]);
  if (result.code !== 0) throw new Error(`visa-crm ${args.join(' ')} failed (${result.code}): ${result.stderr}`);
  return JSON.parse(result.stdout) as T;
}
