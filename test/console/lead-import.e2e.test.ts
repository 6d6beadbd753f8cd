import { fileURLToPath } from 'node:url';
import path from 'node:path';
import t from 'tap';
import { memberOf } from '../identity/support.js';
import { accessible, SCREENSHOTS } from '../support/accessibility.js';
import { chromiumSkip, launchChromium } from '../support/chromium.js';
import { startJobWorker } from './import-support.js';
import { consoleFixture, PASSWORD } from './support.js';

const PIPEDRIVE = fileURLToPath(new URL('../fixtures/imports/pipedrive-people.csv', import.meta.url));
const LATIN1 = 'Name,Phone\nJos\xe9,+919800000001\n';

t.test(
  'importing a Pipedrive export in Chromium: upload, mapping and preview, progress; axe-core on each page',
  { skip: chromiumSkip() },
  async (t) => {
    t.setTimeout(300_000);
    const f = await consoleFixture(t);
    await f.app.request('/v1/leads', {
      method: 'POST',
      key: f.ws.live,
      json: { full_name: 'Zoya Mirza', phone: '+919811199900', consent: true },
    });
    startJobWorker(t, f.app);
    const context = await launchChromium(t, { width: 1280, bypassCSP: true });
    const page = await context.newPage();
    await page.goto(`${f.app.baseUrl}/console/sign-in`);
    await page.fill('#f-email', memberOf('manager'));
    await page.fill('#f-password', PASSWORD);
    await page.click('button[type="submit"]');
    await page.waitForURL(/\/console/);

    await page.goto(`${f.app.baseUrl}/console/w/${f.ws.workspace.slug}/leads`);
    await page.click('text=Import leads from a CSV file');
    await page.waitForURL(/\/leads\/import$/);
    await accessible(t, page, 'the upload page');

    // A file in another encoding: refused by the file field, in words, and the form is there again.
    await page.setInputFiles('#f-file', {
      name: 'latin1.csv',
      mimeType: 'text/csv',
      buffer: Buffer.from(LATIN1, 'latin1'),
    });
    await page.click('button:has-text("Upload and read the file")');
    t.match(await page.textContent('#f-file-error'), /not UTF-8 text: on line 2 it looks like Windows-1252/);
    await accessible(t, page, 'the upload page with a refusal');

    await page.setInputFiles('#f-file', PIPEDRIVE);
    await page.click('button:has-text("Upload and read the file")');
    await page.waitForURL(/\/leads\/import\/[0-9a-f-]{36}$/);
    t.match(await page.textContent('main'), 'Recognised as a Pipedrive export');
    await accessible(t, page, 'the mapping page');

    // Keyboard only: the consent box is reached and ticked, the check submitted.
    await page.focus('#f-consent');
    await page.keyboard.press('Space');
    await page.click('button:has-text("Check the rows with this mapping")');
    await page.waitForURL(/done=checked/);
    t.match(await page.textContent('[role="status"]'), 'Every row was checked');
    await accessible(t, page, 'the preview');
    await page.screenshot({ path: path.join(SCREENSHOTS, 'lead-import-preview.png'), fullPage: true });

    await page.click('button:has-text("Import 5 rows")');
    await page.waitForURL(/\/progress$/);
    await accessible(t, page, 'the progress page');
    await page.waitForFunction(
      () =>
        !(globalThis as unknown as { document: { querySelector(s: string): unknown } }).document.querySelector(
          '[data-refresh]',
        ),
      undefined,
      {
        timeout: 120_000,
      },
    );
    t.match(await page.textContent('#state'), 'Finished');
    t.match(await page.textContent('main'), '5 imported');
    await accessible(t, page, 'the finished import');

    // A phone's width: the preview's table scrolls in its own box, the page does not.
    await page.setViewportSize({ width: 390, height: 800 });
    await page.goBack();
    await page.goto(page.url().replace(/\/progress$/, ''));
    await accessible(t, page, 'the preview at a phone’s width');
  },
);
