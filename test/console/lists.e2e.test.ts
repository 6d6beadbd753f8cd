import { mkdirSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { memberOf } from '../identity/support.js';
import { accessible, SCREENSHOTS } from '../support/accessibility.js';
import { chromiumSkip, launchChromium } from '../support/chromium.js';
import { consoleFixture, PASSWORD } from './support.js';
import { capture, copyLeads } from './lists/support.js';

t.test(
  'the lists in Chromium: sort by a heading, page size, next, select a page, download; axe on every list',
  { skip: chromiumSkip() },
  async (t) => {
    const f = await consoleFixture(t);
    const slug = f.ws.workspace.slug;
    const people = [
      ['Priya Raman', '+919812345678', 'CA'],
      ['Arjun Mehta', '+919800011122', 'GB'],
      ['Kavya Iyer', '+919876500001', 'AU'],
      ['Gurpreet Sandhu', '+919811122233', 'CA'],
    ] as const;
    const ids: string[] = [];
    for (const [full_name, phone, country_interest] of people)
      ids.push(await capture(f.app, f.ws.live, { full_name, phone, country_interest, visa_type: 'student' }));
    await copyLeads(f.app, ids[0]!, 70, 'Walk-in');
    mkdirSync(SCREENSHOTS, { recursive: true });
    const context = await launchChromium(t, { width: 1200, bypassCSP: true });
    const page = await context.newPage();
    await page.goto(`${f.app.baseUrl}/console/sign-in`);
    await page.fill('#f-email', memberOf('manager'));
    await page.fill('#f-password', PASSWORD);
    await page.click('button[type=submit]');
    await page.waitForURL(/\/console(\/w\/[a-z0-9-]+)?$/);

    const base = `${f.app.baseUrl}/console/w/${slug}`;
    await page.goto(`${base}/leads`);
    await accessible(t, page, 'the lead list');
    t.match(await page.locator('p.count').textContent(), /74 leads; 50 on this page/);
    await page.getByRole('link', { name: /^Name/ }).click();
    await page.waitForURL(/sort=name&dir=asc/);
    t.equal(
      await page
        .locator('th[aria-sort="ascending"]')
        .textContent()
        .then((s) => s?.trim().startsWith('Name')),
      true,
    );
    t.equal((await page.locator('tbody tr td:nth-child(2) a').first().textContent())?.trim(), 'Arjun Mehta', 'A first');
    await page.selectOption('#f-size-leads', '25');
    await page.getByRole('button', { name: 'Show' }).click();
    await page.waitForURL(/size=25/);
    t.equal(await page.locator('tbody tr').count(), 25, '25 a page');
    await page.getByRole('link', { name: 'Next 25' }).click();
    await page.waitForURL(/after=/);
    t.equal(await page.locator('tbody tr').count(), 25);
    const paged = page.url();
    await page.getByRole('link', { name: 'Select this page' }).click();
    t.equal(await page.locator('input[name="ids"]:checked').count(), 25, 'the script ticks the page in place');
    t.equal(page.url(), paged, 'without loading it again');
    await page.getByRole('link', { name: 'Clear the selection' }).click();
    t.equal(await page.locator('input[name="ids"]:checked').count(), 0, 'and clears it');
    await page.goto(`${paged}&select=page`);
    t.equal(await page.locator('input[name="ids"]:checked').count(), 25, 'the link without script: the page ticked');
    await accessible(t, page, 'the lead list, a page selected');
    await page.goto(`${base}/leads?sort=name&dir=asc&size=25`);
    await page.screenshot({ path: path.join(SCREENSHOTS, 'console-leads-list.png'), fullPage: false });
    for (const [list, name] of [
      ['applications', 'the application list'],
      ['tasks?show=all', 'the task list'],
      ['invoices', 'the invoice list'],
      ['members', 'the member list'],
    ] as const) {
      await page.goto(`${base}/${list}`);
      await accessible(t, page, name);
    }
    await page.goto(`${base}/applications?sort=case&dir=asc&status=active`);
    await accessible(t, page, 'the application list, filtered and sorted');
    await page.goto(`${base}/tasks`);
    await page.fill('#f-title', 'Call about the offer letter');
    await page.fill('#f-for', '+919812345678');
    await page.fill('#f-due_at', '2026-12-01T10:00');
    await page.getByRole('button', { name: 'Create the task' }).click();
    await page.waitForURL(/done=created/);
    t.match(await page.locator('main').textContent(), 'The task was created.');
    t.match(await page.locator('tbody').textContent(), 'Call about the offer letter', 'created from the list');
    await page.goto(`${base}`);
    await page.getByRole('button', { name: /Complete Call about the offer letter/ }).click();
    await page.waitForURL(/done=completed/);
    t.match(await page.locator('main').textContent(), 'The task was completed.', 'Complete on Today says so');
    await accessible(t, page, 'Today with a Complete button');
    await page.goto(`${base}/leads?sort=name&dir=asc`);
    const download = page.waitForEvent('download');
    await page.getByRole('link', { name: 'Download all as CSV' }).click();
    const file = await download;
    t.match(file.suggestedFilename(), /^leads-ws-[0-9a-f]+-\d{4}-\d\d-\d\d\.csv$/, 'the file downloads');
  },
);
