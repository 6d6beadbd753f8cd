import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { Page } from 'playwright-core';
import type { Test } from 'tap';
import { projectRoot } from '../../src/shared/paths.js';

/** Where the console's screenshots go: docs/images, which the README's tour shows. */
export const SCREENSHOTS = path.join(projectRoot(), 'docs', 'images');

const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
const WCAG_22_AA = ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa'];

declare const axe: {
  run(options: unknown): Promise<{ violations: { id: string; help: string; nodes: { target: string[] }[] }[] }>;
};

/**
 * axe-core's WCAG 2.2 AA rules on the page as it stands: no violation, else each named with the elements it found.
 * The script is evaluated through the debugging protocol, which the page's CSP does not govern.
 */
export async function accessible(t: Test, page: Page, name: string): Promise<void> {
  await page.evaluate(AXE_SOURCE);
  const result = await page.evaluate((tags) => axe.run({ runOnly: { type: 'tag', values: tags } }), WCAG_22_AA);
  t.same(
    result.violations.map((v) => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).join(', ')})`),
    [],
    `${name}: no WCAG 2.2 AA violation`,
  );
}
