import { mkdirSync } from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';
import t, { type Test } from 'tap';
import { memberOf } from '../identity/support.js';
import { accessible, SCREENSHOTS } from '../support/accessibility.js';
import { chromiumSkip, launchChromium } from '../support/chromium.js';
import { TestClock } from '../support/app.js';
import { consoleFixture, PASSWORD } from './support.js';

// Browser globals used by the callbacks handed to page.evaluate (the project compiles without the DOM library).
declare const document: { activeElement: { getAttribute(name: string): string | null } | null };

type Fixture = Awaited<ReturnType<typeof consoleFixture>>;

async function capture(t: Test, f: Fixture, lead: Record<string, unknown>): Promise<string> {
  const response = await f.app.request('/v1/leads', {
    method: 'POST',
    key: f.ws.live,
    json: { consent: true, ...lead },
  });
  t.equal(response.status, 201);
  return ((await response.json()) as { id: string }).id;
}

async function stageOf(f: Fixture, id: string): Promise<string> {
  const response = await f.app.request(`/v1/leads/${id}`, { key: f.ws.live });
  return ((await response.json()) as { stage: { key: string } }).stage.key;
}

const cardIn = (page: Page, stage: string, id: string) =>
  page.locator(`#board .board-column[data-stage="${stage}"] article.card[data-id="${id}"]`);

/** What the live region said last (the script empties it, then speaks, so a repeated sentence is heard again). */
async function heard(page: Page, expected: RegExp): Promise<string> {
  const live = page.locator('#board-live');
  await live.filter({ hasText: expected }).waitFor({ timeout: 10_000 });
  return (await live.textContent()) ?? '';
}

async function signIn(page: Page, baseUrl: string, email: string): Promise<void> {
  await page.goto(`${baseUrl}/console/sign-in`);
  await page.fill('#f-email', email);
  await page.fill('#f-password', PASSWORD);
  await page.click('button[type=submit]');
  await page.waitForURL(/\/console(\/w\/[^/]+)?$/);
}

t.test(
  'the boards in Chromium: drag a card, move one by keyboard, a refused move said on the card; axe on each state',
  { skip: chromiumSkip() },
  async (t) => {
    // A workspace at work for ten days: leads in every stage, of several ages, one follow-up overdue.
    const day = 86_400_000;
    const clock = new TestClock(new Date(Date.now() - 10 * day));
    const f = await consoleFixture(t, { clock });
    const earlier: [string, Record<string, unknown>, number][] = [
      [
        'Sara Khan',
        { stage_key: 'qualified', next_follow_up_at: new Date(Date.now() + 2 * day).toISOString() },
        2 * day,
      ],
      [
        'Vikram Singh',
        { stage_key: 'counselling', next_follow_up_at: new Date(Date.now() - day).toISOString() },
        3 * day,
      ],
      ['Ananya Iyer', { stage_key: 'lost', lost_reason_key: 'chose_competitor' }, 2 * day],
      ['Rohan Das', { stage_key: 'contacted' }, 3 * day - 3_600_000],
    ];
    for (const [i, [name, change, wait]] of earlier.entries()) {
      const id = await capture(t, f, {
        full_name: name,
        phone: `+91980002000${i}`,
        visa_type: 'student',
        country_interest: 'CA',
      });
      await f.app.request(`/v1/leads/${id}`, { method: 'PATCH', key: f.ws.live, json: change });
      clock.advance(wait);
    }
    const priya = await capture(t, f, {
      full_name: 'Priya Raman',
      phone: '+919812345678',
      visa_type: 'student',
      country_interest: 'CA',
    });
    const arjun = await capture(t, f, {
      full_name: 'Arjun Mehta',
      phone: '+919800011122',
      visa_type: 'work',
      country_interest: 'AU',
    });
    const meera = await capture(t, f, {
      full_name: 'Meera Nair',
      phone: '+919800011133',
      visa_type: 'student',
      country_interest: 'GB',
    });
    const kabir = await capture(t, f, {
      full_name: 'Kabir Shah',
      phone: '+919800011144',
      visa_type: 'pr',
      country_interest: 'CA',
    });
    await f.app.request(`/v1/leads/${meera}`, {
      method: 'PATCH',
      key: f.ws.live,
      json: { stage_key: 'contacted', next_follow_up_at: '2030-01-15T04:30:00Z' },
    });
    clock.current = new Date();
    const slug = f.ws.workspace.slug;
    mkdirSync(SCREENSHOTS, { recursive: true });

    // The console's own CSP stays on: the board's script must run under script-src 'self'.
    const context = await launchChromium(t, { width: 1280 });
    const page = await context.newPage();
    const refused: string[] = [];
    page.on('console', (m) => {
      if (/Content Security Policy|Refused to/i.test(m.text())) refused.push(m.text());
    });
    await signIn(page, f.app.baseUrl, memberOf('counsellor'));
    await page.goto(`${f.app.baseUrl}/console/w/${slug}/leads/board`);
    await accessible(t, page, 'the lead board');
    t.match(
      await page.locator('#board .board-column[data-stage="counselling"] article.card').innerText(),
      /Vikram Singh[\s\S]*overdue[\s\S]*In stage\s*8 days/,
      'an overdue follow-up and the days in stage',
    );
    await page.screenshot({ path: path.join(SCREENSHOTS, 'console-lead-board.png'), fullPage: true });

    // Drag and drop: Priya from New to Contacted.
    await cardIn(page, 'new', priya).dragTo(page.locator('#board .board-column[data-stage="contacted"]'));
    t.match(await heard(page, /moved to Contacted/), 'Priya Raman moved to Contacted.');
    await cardIn(page, 'contacted', priya).waitFor();
    t.equal(await stageOf(f, priya), 'contacted', 'the drop moved the lead');
    t.equal(
      await page.locator('#board .board-column[data-stage="contacted"] .column-count').first().textContent(),
      '3 leads',
      'the count followed',
    );

    // The keyboard: focus Arjun's card, Space, two columns to the right, Enter.
    await cardIn(page, 'new', arjun).focus();
    await page.keyboard.press('Space');
    t.match(await heard(page, /Picked up/), /Picked up Arjun Mehta, in New\./);
    await page.keyboard.press('ArrowRight');
    t.match(await heard(page, /^Contacted\.$/), 'Contacted.');
    await page.keyboard.press('ArrowRight');
    await heard(page, /^Qualified\.$/);
    await page.keyboard.press('Enter');
    t.match(await heard(page, /moved to Qualified/), 'Arjun Mehta moved to Qualified.');
    await cardIn(page, 'qualified', arjun).waitFor();
    t.equal(await stageOf(f, arjun), 'qualified');
    t.equal(
      await page.evaluate(() => document.activeElement?.getAttribute('data-id') ?? null),
      arjun,
      'focus stays on the card',
    );

    // Escape puts it back: nothing is sent.
    await page.keyboard.press('Space');
    await heard(page, /Picked up Arjun Mehta, in Qualified/);
    await page.keyboard.press('ArrowLeft');
    await page.keyboard.press('Escape');
    t.match(await heard(page, /Not moved/), 'Not moved: Arjun Mehta stays where it was.');
    t.equal(await stageOf(f, arjun), 'qualified', 'Escape moved nothing');

    // A refused move (the lost stage needs a reason a card does not hold): said, and the card stays.
    await cardIn(page, 'contacted', meera).dragTo(page.locator('#board .board-column[data-stage="lost"]'));
    t.match(await heard(page, /Not moved/), /Not moved: Choose a lost reason/);
    t.match(
      await cardIn(page, 'contacted', meera).locator('.error').innerText(),
      /Not moved: Choose a lost reason: a lead moves to the lost stage only with one\./,
    );
    t.equal(await stageOf(f, meera), 'contacted');
    await accessible(t, page, 'the lead board with a refused move');

    // The form without the script's help: the card's select and its Move button, a plain POST.
    await cardIn(page, 'new', kabir).locator('select[name="stage"]').selectOption('counselling');
    await cardIn(page, 'new', kabir).locator('button[type=submit]').click();
    await page.waitForURL(/moved=/);
    t.match(await page.locator('.notice.status').innerText(), 'Kabir Shah moved to Counselling.');
    t.equal(await stageOf(f, kabir), 'counselling');

    // On a phone: the columns scroll sideways in their own box, never the page.
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto(`${f.app.baseUrl}/console/w/${slug}/leads/board`);
    const wide = await page.evaluate(
      `[...document.querySelectorAll('body *')].filter((e) => e.getBoundingClientRect().right > window.innerWidth + 1 && !e.closest('.board, nav.primary')).map((e) => e.tagName + '.' + e.className + '#' + e.id).slice(0, 8)`,
    );
    t.same(wide, [], 'nothing outside the board reaches past the window');
    t.equal(
      await page.evaluate('document.documentElement.scrollWidth <= window.innerWidth'),
      true,
      'no sideways scroll of the page',
    );
    await accessible(t, page, 'the lead board on a phone');
    await page.setViewportSize({ width: 1280, height: 900 });

    // The applications board: two cases, one dragged, one moved by keyboard.
    const admin = f.client();
    await admin.signIn(memberOf('admin'));
    const cases: string[] = [];
    for (const lead of [priya, arjun]) {
      const converted = await admin.post(`/console/w/${slug}/leads/${lead}/convert`, { confirm: 'yes' });
      cases.push(/applications\/([0-9a-f-]{36})/.exec(converted.headers.get('location') ?? '')![1]!);
    }
    await page.goto(`${f.app.baseUrl}/console/w/${slug}/applications/board`);
    await accessible(t, page, 'the applications board');
    const caseIn = (stage: string, id: string) => cardIn(page, stage, id);
    await caseIn('profile', cases[0]!).dragTo(page.locator('#board .board-column[data-stage="documents"]'));
    t.match(await heard(page, /moved to Documents/), /moved to Documents\./);
    await caseIn('documents', cases[0]!).waitFor();
    await caseIn('profile', cases[1]!).focus();
    await page.keyboard.press('Space');
    await heard(page, /Picked up/);
    for (const key of ['ArrowRight', 'ArrowRight', 'Enter']) await page.keyboard.press(key);
    t.match(await heard(page, /moved to Submission/), /moved to Submission\./);
    await caseIn('submission', cases[1]!).waitFor();
    const statuses = await f.app.pool.query<{ id: string; stage: string }>(
      `SELECT id, status->'stage'->>'key' AS stage FROM applications WHERE id = ANY($1::uuid[])`,
      [cases],
    );
    t.same(Object.fromEntries(statuses.rows.map((r) => [r.id, r.stage])), {
      [cases[0]!]: 'documents',
      [cases[1]!]: 'submission',
    });
    await accessible(t, page, 'the applications board after the moves');
    t.same(refused, [], 'no script or style refused by the CSP');

    // A viewer: the same board, nothing to move.
    const viewerContext = await launchChromium(t, { width: 1280 });
    const viewer = await viewerContext.newPage();
    await signIn(viewer, f.app.baseUrl, memberOf('viewer'));
    await viewer.goto(`${f.app.baseUrl}/console/w/${slug}/leads/board`);
    t.equal(await viewer.locator('#board article.card').count(), 6, 'the six leads not converted');
    t.equal(
      await viewer.locator('#board [draggable="true"], #board form.move').count(),
      0,
      'no move controls for a viewer',
    );
    await accessible(t, viewer, 'the lead board as a viewer');
  },
);
