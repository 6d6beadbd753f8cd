import { mkdirSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { pino } from 'pino';
import { JobWorker } from '../../src/subscribers/job-worker.js';
import { jobKindsOf } from '../../src/subscribers/job-kinds.js';
import { memberOf } from '../identity/support.js';
import { accessible, SCREENSHOTS } from '../support/accessibility.js';
import { chromiumSkip, launchChromium } from '../support/chromium.js';
import { seedJobLeads } from '../jobs/support.js';
import { consoleFixture, PASSWORD } from './support.js';

// A bulk assignment in Chromium: the confirmation naming the count, the job's page while it runs (held at an item, so
// its progress shows and its script refreshes it in place) and once it has ended, with the refused rows and why.
t.test('a bulk assignment in Chromium, its confirmation and its progress page', { skip: chromiumSkip() }, async (t) => {
  t.setTimeout(240_000);
  const { app, ws } = await consoleFixture(t);
  const slug = ws.workspace.slug;
  const leads = await seedJobLeads(app.pool, ws.workspace, 40);
  let release: () => void = () => undefined;
  const held = new Promise<void>((resolve) => (release = resolve));
  const worker = new JobWorker(app.services, jobKindsOf(app.services), pino({ level: 'silent' }), {
    pollIntervalMs: 50,
    itemsPerTransaction: 4,
    // Hold the job before its item 17, until the test has seen it run.
    beforeItem: async (_job, seq) => (seq >= 17 ? held : undefined),
  });
  worker.start();
  t.teardown(async () => {
    release();
    await worker.stop();
  });
  mkdirSync(SCREENSHOTS, { recursive: true });

  // The console's own CSP stays on: the progress script must run under it.
  const context = await launchChromium(t, { width: 1100 });
  const page = await context.newPage();
  await page.goto(`${app.baseUrl}/console/sign-in`);
  await page.fill('#f-email', memberOf('manager'));
  await page.fill('#f-password', PASSWORD);
  await page.click('button[type=submit]');
  await page.waitForURL(/\/console$/);

  // The list's selection form (the lists' bulk form posts these fields): every seeded lead, assign.
  await page.goto(`${app.baseUrl}/console/w/${slug}/leads`);
  await page.evaluate(
    `(() => {
      const form = document.createElement('form');
      form.method = 'post';
      form.action = location.pathname + '/bulk';
      const add = (name, value) => { const i = document.createElement('input'); i.type = 'hidden'; i.name = name; i.value = value; form.appendChild(i); };
      add('_csrf', document.querySelector('input[name=_csrf]').value);
      add('action', 'assign');
      for (const id of ${JSON.stringify(leads)}) add('ids', id);
      document.body.appendChild(form);
      form.submit();
    })()`,
  );
  await page.waitForURL(/\/leads\/bulk$/);
  t.equal(await page.locator('h1').textContent(), 'Assign an owner: 40 leads');
  await accessible(t, page, 'the bulk confirmation');
  await page.selectOption('#f-owner', memberOf('admin'));
  await page.screenshot({ path: path.join(SCREENSHOTS, 'console-bulk-confirm.png'), fullPage: true });
  await page.click('button[type=submit]:has-text("Assign an owner for 40 leads")');
  await page.waitForURL(/\/jobs\/[0-9a-f-]{36}\?done=started$/);

  // Held at item 17: the page says it runs and how far it has got.
  const status = page.locator('#job-progress [role=status]');
  await t.resolves(status.filter({ hasText: /24 to go/ }).waitFor({ timeout: 20_000 }));
  await t.resolves(page.locator('#job-progress h2 .badge', { hasText: 'Running' }).waitFor({ timeout: 5_000 }));
  t.equal(await page.evaluate("document.getElementById('job-bar').value"), 16, 'the bar shows 16 rows settled');
  t.match(await status.textContent(), /^Running: \d+ of 40 done, \d+ left as they were \(listed below\); 24 to go\.$/);
  t.match(await page.locator('#job-progress').getAttribute('data-running'), 'yes');
  // Without script, a link reloads the page (the script refreshes it in place instead).
  t.equal(await page.locator('#job-progress a', { hasText: 'Refresh to see how far it has got' }).count(), 1);
  await accessible(t, page, 'a running job');
  await page.screenshot({ path: path.join(SCREENSHOTS, 'console-bulk-progress.png'), fullPage: true });
  const url = page.url();

  // Released: the script sees the job end and shows its outcome, without the member reloading.
  release();
  await t.resolves(page.locator('#job-progress [role=status]', { hasText: 'Finished:' }).waitFor({ timeout: 30_000 }));
  t.match(await page.locator('#job-progress').getAttribute('data-running'), 'no');
  t.ok(
    (await page.locator('#refused ~ * tbody tr, section[aria-labelledby=refused] tbody tr').count()) > 0,
    'refused rows listed',
  );
  t.match(
    await page.locator('section[aria-labelledby=refused]').textContent(),
    /not an active user of the lead's branch BLR/,
  );
  await accessible(t, page, 'a finished job');
  await page.screenshot({ path: path.join(SCREENSHOTS, 'console-bulk-outcome.png'), fullPage: true });

  // At a phone's width.
  const phone = await launchChromium(t, { width: 390 });
  const small = await phone.newPage();
  await small.goto(`${app.baseUrl}/console/sign-in`);
  await small.fill('#f-email', memberOf('manager'));
  await small.fill('#f-password', PASSWORD);
  await small.click('button[type=submit]');
  await small.waitForURL(/\/console$/);
  await small.goto(url);
  await accessible(t, small, 'a finished job at a phone’s width');
  await small.goto(`${app.baseUrl}/console/w/${slug}/jobs`);
  t.match(await small.locator('main').textContent(), /Assign leads to The admin/);
  await accessible(t, small, 'the recent jobs');
});
