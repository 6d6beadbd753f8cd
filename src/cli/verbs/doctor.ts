import { access, constants } from 'node:fs/promises';
import type { Command } from 'commander';
import { passwordWeakness } from '../../identity/passwords.js';
import { webauthn } from '../../identity/webauthn.js';
import { binaries } from '../../storage/postgres-process.js';
import { CliError, output } from '../output.js';
import { loadService } from './service.js';

/** One part of the tool that is loaded only when first needed, and a use of it that shows it works as installed. */
export interface LazyPartCheck {
  name: string;
  /** The source file whose `import(...)` this check goes through (test/cli/doctor.test.ts keeps the list whole). */
  loadedIn: string;
  run(): Promise<string>;
}

const CONTEXT = { email: 'doctor@example.com', workspaces: [] };

/**
 * Every lazily loaded part. The linked tool (scripts/bundle-cli.mjs) and dist/src load these differently, and a part
 * that loads in one and not the other fails only when a user first reaches it: a password form, a passkey, a start.
 */
export const LAZY_PART_CHECKS: LazyPartCheck[] = [
  {
    name: 'password strength (zxcvbn-ts)',
    loadedIn: 'src/identity/passwords.ts',
    async run() {
      const weak = await passwordWeakness('password123456', CONTEXT);
      const strong = await passwordWeakness('lantern quietly orbits seven mossy cliffs', CONTEXT);
      if (weak === undefined || strong !== undefined) throw new Error('the strength check scored a known pair wrongly');
      return 'refuses a common password, accepts a long unrelated one';
    },
  },
  {
    name: 'passkeys (@simplewebauthn/server)',
    loadedIn: 'src/identity/webauthn.ts',
    async run() {
      const { generateRegistrationOptions } = await webauthn();
      const options = await generateRegistrationOptions({ rpName: 'doctor', rpID: 'localhost', userName: 'doctor' });
      if (!options.challenge) throw new Error('registration options came without a challenge');
      return 'makes registration options';
    },
  },
  {
    name: 'embedded PostgreSQL binaries',
    loadedIn: 'src/storage/postgres-process.ts',
    async run() {
      const { initdb, postgres } = await binaries();
      for (const file of [initdb, postgres]) await access(file, constants.X_OK);
      return postgres;
    },
  },
  {
    name: 'the service (fastify, routes, console, workers)',
    loadedIn: 'src/cli/verbs/service.ts',
    async run() {
      const service = await loadService();
      if (typeof service.startService !== 'function') throw new Error('startService is missing');
      return 'loads';
    },
  },
];

interface CheckResult {
  name: string;
  ok: boolean;
  detail: string;
}

async function runCheck(check: LazyPartCheck): Promise<CheckResult> {
  try {
    return { name: check.name, ok: true, detail: await check.run() };
  } catch (error) {
    return { name: check.name, ok: false, detail: error instanceof Error ? error.message : String(error) };
  }
}

/** `visa-crm doctor`: loads and uses every part of the tool that is loaded only when needed. */
export function registerDoctorVerbs(program: Command, json: () => boolean): void {
  program
    .command('doctor')
    .description('check that this installation can load and use every part the service needs (no database needed)')
    .action(async () => {
      const results: CheckResult[] = [];
      for (const check of LAZY_PART_CHECKS) results.push(await runCheck(check));
      output(json(), { checks: results }, () =>
        results.map((r) => `${r.ok ? 'ok    ' : 'FAILED'}  ${r.name}: ${r.detail}`).join('\n'),
      );
      const failed = results.filter((r) => !r.ok).map((r) => r.name);
      if (failed.length > 0) throw new CliError(`Not working: ${failed.join(', ')}`, 1);
    });
}
