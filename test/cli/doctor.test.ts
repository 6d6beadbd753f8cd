import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { LAZY_PART_CHECKS } from '../../src/cli/verbs/doctor.js';
import { cliArgs, collect, toolEnv } from '../support/cli.js';

// Every part the service loads only when first needed is loaded and used through the tool users run (the linked
// dist/cli when the test command built it): a part the link breaks fails here, not at a user's first password form.

const ROOT = path.resolve(import.meta.dirname, '../..');

/** The files of src that load something with `import(...)` (not `typeof import(...)` in types, not comments). */
function filesWithLazyImports(): string[] {
  const files: string[] = [];
  for (const name of readdirSync(path.join(ROOT, 'src'), { recursive: true, encoding: 'utf8' })) {
    if (!name.endsWith('.ts')) continue;
    const code = readFileSync(path.join(ROOT, 'src', name), 'utf8')
      .replace(/\/\*[\s\S]*?\*\//g, '')
      .replace(/^\s*\/\/.*$/gm, '');
    if (/(?<!typeof\s)\bimport\s*\(/.test(code)) files.push(path.join('src', name));
  }
  return files.sort();
}

t.test('doctor covers every file of src that imports lazily', async (t) => {
  const covered = [...new Set(LAZY_PART_CHECKS.map((c) => c.loadedIn))].sort();
  t.same(covered, filesWithLazyImports(), 'a new import(...) in src needs its check in src/cli/verbs/doctor.ts');
});

t.test('every lazily loaded part loads and works in the tool as users run it', async (t) => {
  const env = toolEnv();
  delete env.DATABASE_URL; // it needs none
  const child = spawn(process.execPath, [...cliArgs(), '--json', 'doctor'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  const result = await collect(child);
  t.equal(result.code, 0, `exits 0 (${result.stderr.trim()})`);
  const { checks } = JSON.parse(result.stdout) as { checks: { name: string; ok: boolean; detail: string }[] };
  t.same(
    checks.map((c) => c.name),
    LAZY_PART_CHECKS.map((c) => c.name),
    'one result per check',
  );
  for (const check of checks) t.ok(check.ok, `${check.name}: ${check.detail}`);
});
