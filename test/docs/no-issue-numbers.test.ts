import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';

// Comments and docs name the behaviour, the migration or the commit, never the work item that asked for it: an issue
// number says nothing to a reader without the tracker, and "as of issue N" goes stale with the next change.
const ROOTS = ['src', 'test', 'bench', 'scripts', 'docs'];
const FILES = ['README.md'];
const TEXT = /\.(ts|mjs|js|md)$/;
const ISSUE_NUMBER = /\bissues? #?\d+\b/i;

function filesUnder(root: string): string[] {
  return readdirSync(root, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && TEXT.test(entry.name))
    .map((entry) => path.join(entry.parentPath, entry.name));
}

t.test('no comment or document names an issue by its number', async (t) => {
  const found: string[] = [];
  for (const file of [...ROOTS.flatMap(filesUnder), ...FILES]) {
    if (file === path.join('test', 'docs', 'no-issue-numbers.test.ts')) continue;
    readFileSync(file, 'utf8')
      .split('\n')
      .forEach((line, index) => {
        if (ISSUE_NUMBER.test(line)) found.push(`${file}:${index + 1}: ${line.trim().slice(0, 100)}`);
      });
  }
  t.same(found, [], 'lines naming an issue number');
});
