import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';
import type { Test } from 'tap';

/** Debian's chromium package; no browser is downloaded. */
export const CHROMIUM = '/usr/bin/chromium';
const INSTALL_LINE = 'apt-get update && apt-get install -y chromium';

function missingChromium(): string | null {
  return existsSync(CHROMIUM) ? null : `Chromium is not installed at ${CHROMIUM}; install it with: ${INSTALL_LINE}`;
}

/**
 * tap's `skip` for a test that drives Chromium. CI installs Chromium (.ci/run), so there a missing browser fails the
 * run (launchChromium throws); a developer's machine without it skips the test with the line that installs it.
 */
export function chromiumSkip(): string | false {
  return process.env.CI ? false : (missingChromium() ?? false);
}

export interface ChromiumOptions {
  /** The window's width in CSS pixels; it is 900 high. */
  width: number;
  /** Lets a test inject inline scripts (axe-core) that the page's CSP would refuse. */
  bypassCSP?: boolean;
}

/** Headless Chromium in a fresh profile, closed and removed when the test ends. */
export async function launchChromium(t: Test, options: ChromiumOptions): Promise<BrowserContext> {
  const missing = missingChromium();
  if (missing) throw new Error(missing);
  const userDataDir = mkdtempSync(path.join(os.tmpdir(), 'vcrm-chromium-'));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
    viewport: { width: options.width, height: 900 },
    locale: 'en-GB',
    bypassCSP: options.bypassCSP ?? false,
  });
  t.teardown(async () => {
    await context.close();
    rmSync(userDataDir, { recursive: true, force: true });
  });
  return context;
}
