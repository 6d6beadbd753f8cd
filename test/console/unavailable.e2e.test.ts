import path from 'node:path';
import type pg from 'pg';
import t from 'tap';
import { memberOf } from '../identity/support.js';
import { accessible, SCREENSHOTS } from '../support/accessibility.js';
import { chromiumSkip, launchChromium } from '../support/chromium.js';
import { PASSWORD, consoleFixture } from './support.js';

// The busy page of test/console/unavailable.test.ts, as a member meets it in a browser: read, accessible, on a phone.
t.test('the busy page in headless Chromium', { skip: chromiumSkip() }, async (t) => {
  t.setTimeout(120_000);
  const f = await consoleFixture(t);
  const context = await launchChromium(t, { width: 390 });
  const page = await context.newPage();
  await page.goto(`${f.app.baseUrl}/console/sign-in`);
  await page.fill('#f-email', memberOf('counsellor'));
  await page.fill('#f-password', PASSWORD);
  await page.click('button:has-text("Sign in")');
  await page.waitForURL(`${f.app.baseUrl}/console/w/${f.ws.workspace.slug}`);

  const pool = f.app.services.pool;
  const held: pg.PoolClient[] = [];
  t.teardown(() => held.splice(0).forEach((client) => client.release()));
  for (let i = 0; i < (pool.options.max ?? 10); i++) held.push(await pool.connect());
  // Short only once every connection is held: opening the last ones on a loaded machine can take longer than this
  // (a CI run of 2026-11-30 failed here), while the page's wait for a free one is what should give up quickly.
  pool.options.connectionTimeoutMillis = 300;
  const answer = await page.goto(`${f.app.baseUrl}/console/w/${f.ws.workspace.slug}/leads`);
  t.equal(answer?.status(), 503);
  t.match(await page.textContent('main'), 'too busy to answer right now');
  await accessible(t, page, 'the busy page');
  await page.screenshot({ path: path.join(SCREENSHOTS, 'console-busy-phone.png'), fullPage: true });
  for (const client of held.splice(0)) client.release();
});
