import { mkdirSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { ensureAccount, setPassword } from '../../src/identity/accounts.js';
import { everyRole, memberOf } from '../identity/support.js';
import { seedWorkspace, startApp } from '../support/app.js';
import { accessible, SCREENSHOTS } from '../support/accessibility.js';
import { chromiumSkip, launchChromium } from '../support/chromium.js';
import { PASSWORD } from './support.js';

t.test(
  'the New lead form, the search box and notes in headless Chromium, axe clean, at desktop and phone widths',
  { skip: chromiumSkip() },
  async (t) => {
    t.setTimeout(300_000);
    const app = await startApp(t, {});
    const ws = await seedWorkspace(app, { ...everyRole(), time_zone: 'Asia/Kolkata' });
    for (const user of ws.workspace.settings.users) {
      const account = await ensureAccount(app.pool, user, app.services.now());
      await setPassword(app.pool, account.id, PASSWORD, app.services.now());
    }
    const people = [
      ['Gurpreet Sandhu', '+919876543210', 'spouse_dependent', 'CA'],
      ['Gurpreet Kaur', '+919876500011', 'student', 'GB'],
      ['Harpreet Sandhu', '+919876500022', 'work', 'AU'],
      ['Zoë Ångström', '+919876500033', 'visitor', 'US'],
    ] as const;
    const ids: string[] = [];
    for (const [full_name, phone, visa_type, country_interest] of people) {
      const created = await app.request('/v1/leads', {
        method: 'POST',
        key: ws.live,
        json: { full_name, phone, visa_type, country_interest, consent: true },
      });
      ids.push(((await created.json()) as { id: string }).id);
    }
    const base = `${app.baseUrl}/console/w/${ws.workspace.slug}`;
    const context = await launchChromium(t, { width: 1280, bypassCSP: true });
    const page = await context.newPage();
    await page.goto(`${app.baseUrl}/console/sign-in`);
    await page.fill('#f-email', memberOf('counsellor'));
    await page.fill('#f-password', PASSWORD);
    await page.click('button[type="submit"]');
    await page.waitForURL(/\/console$/);

    // The New lead form: a refusal by its field, then the lead entered.
    await page.goto(`${base}/leads`);
    await page.click('text=New lead (a walk-in or a phone call)');
    await page.waitForURL(/\/leads\/new$/);
    await accessible(t, page, 'the New lead form');
    await page.fill('#f-full_name', 'Meera Nair');
    await page.fill('#f-phone', '12');
    await page.click('button:has-text("Enter the lead")');
    t.match(await page.textContent('#f-phone-error'), /^Phone /, 'the phone is refused by its field');
    t.equal(await page.inputValue('#f-full_name'), 'Meera Nair', 'what was typed is kept');
    await accessible(t, page, 'the New lead form with a refusal');
    await page.fill('#f-phone', '098111 22334');
    await page.selectOption('#f-visa_type', 'spouse_dependent');
    await page.check('#f-consent');
    await page.click('button:has-text("Enter the lead")');
    await page.waitForURL(/done=entered/);
    const facts = await page.textContent('dl.facts');
    t.match(facts, '+91 98111 22334', 'the phone as India writes it');
    t.match(facts, 'Spouse or dependant', 'the visa type by name');
    t.match(facts, 'Console', 'the source');

    // The search box in the header: the phone without its national prefix, the name in another order.
    await page.goto(`${base}/leads`);
    await page.fill('#site-search-q', '09876543210');
    await page.keyboard.press('Enter');
    await page.waitForURL(/\/search\?q=/);
    t.match(await page.textContent('main'), 'Gurpreet Sandhu', 'the phone finds its lead');
    await page.fill('#site-search-q', 'sandhu gurpreet');
    await page.keyboard.press('Enter');
    await page.waitForURL(/q=sandhu\+gurpreet/);
    const found = await page.locator('#found-leads + ul a').allTextContents();
    t.ok(
      found.some((s) => s.startsWith('Gurpreet Sandhu')),
      'the name in another order',
    );
    t.notOk(
      found.some((s) => s.startsWith('Harpreet')),
      'and only names holding both words',
    );
    await accessible(t, page, 'the search results');
    // A task about one of them, so the results show more than one kind.
    await page.goto(`${base}/tasks?lead=${ids[0]}`);
    await page.fill('#f-title', 'Call Gurpreet Sandhu about the biometrics slot');
    await page.fill('#f-due_at', '2030-01-15T11:00');
    await page.click('text=Create the task');
    await page.waitForURL(/tasks/);
    await page.fill('#site-search-q', 'Sandhu');
    await page.keyboard.press('Enter');
    await page.waitForURL(/q=Sandhu$/);
    t.equal(await page.locator('#found-tasks + ul a').count(), 1, 'the task by a word of its title');
    mkdirSync(SCREENSHOTS, { recursive: true });
    await page.screenshot({ path: path.join(SCREENSHOTS, 'search-box.png') });
    await page.click('#found-leads + ul a >> text=Gurpreet Sandhu');
    await page.waitForURL(/\/leads\/[0-9a-f-]{36}$/);
    t.match(await page.textContent('h1'), 'Gurpreet Sandhu', 'a result links to its record');

    // At a phone's width: the box and the results fit, still axe clean.
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto(`${base}/search?q=${encodeURIComponent('zoe angstrom')}`);
    t.match(await page.textContent('main'), 'Zoë Ångström', 'accents ignored');
    await accessible(t, page, 'the search results at 390 px');
    await page.goto(`${base}/leads/new`);
    await accessible(t, page, 'the New lead form at 390 px');
  },
);
