import { mkdirSync } from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';
import t, { type Test } from 'tap';
import { pauseEndpoint } from '../../src/commands/webhooks/endpoints.js';
import { ensureAccount, setPassword } from '../../src/identity/accounts.js';
import { can, ROLES, type Role } from '../../src/identity/permissions.js';
import { everyRole, memberOf } from '../identity/support.js';
import { accessible, SCREENSHOTS } from '../support/accessibility.js';
import { chromiumSkip, launchChromium } from '../support/chromium.js';
import { webhookHarness } from '../webhooks/support/harness.js';
import { PASSWORD } from './support.js';

// Browser globals used by the callbacks handed to page.evaluate (the project compiles without the DOM library).

/** The page is no wider than the window: nothing to scroll sideways (else the elements that stick out are named). */
async function noSidewaysScroll(t: Test, page: Page, name: string): Promise<void> {
  // In the page's own words (a string, as the project compiles without the DOM library): the elements past the
  // window's right edge that no scrolling box of their own holds.
  const { scrollWidth, clientWidth, wide } = await page.evaluate<{
    scrollWidth: number;
    clientWidth: number;
    wide: string[];
  }>(`(() => {
    const width = document.documentElement.clientWidth;
    const clipped = (el) => {
      for (let a = el.parentElement; a && a !== document.body; a = a.parentElement)
        if (['auto', 'scroll', 'hidden'].includes(getComputedStyle(a).overflowX)) return true;
      return false;
    };
    const wide = [...document.querySelectorAll('body *')]
      .filter((el) => (el.getBoundingClientRect().right > width + 0.5 || el.scrollWidth > width) && !clipped(el))
      .slice(0, 5)
      .map((el) => el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') + '.' + el.className + ' ' + Math.round(el.getBoundingClientRect().right) + '/' + el.scrollWidth);
    return { scrollWidth: document.documentElement.scrollWidth, clientWidth: width, wide };
  })()`);
  t.ok(
    scrollWidth <= clientWidth,
    `${name}: ${scrollWidth} px of content in ${clientWidth} px, no sideways scroll${wide.length ? ` (${wide.join(', ')})` : ''}`,
  );
}

t.test(
  'Today, the header and the time zone in headless Chromium, per role, at phone and desktop widths',
  {
    skip: chromiumSkip(),
  },
  async (t) => {
    t.setTimeout(300_000);
    const h = await webhookHarness(t, { definition: { ...everyRole(), time_zone: 'Asia/Kolkata' } });
    for (const user of h.ws.workspace.settings.users) {
      const account = await ensureAccount(h.pool, user, h.services.now());
      await setPassword(h.pool, account.id, PASSWORD, h.services.now());
    }
    const slug = h.ws.workspace.slug;
    const base = `${h.baseUrl}/console/w/${slug}`;
    const counsellor = memberOf('counsellor');
    const lead = async (name: string, phone: string, patch: Record<string, unknown>) => {
      const created = await h.request('/v1/leads', {
        method: 'POST',
        key: h.ws.live,
        json: { full_name: name, phone, consent: true },
      });
      const id = ((await created.json()) as { id: string }).id;
      await h.request(`/v1/leads/${id}`, { method: 'PATCH', key: h.ws.live, json: patch });
      return id;
    };
    const twoDaysAgo = new Date(Date.now() - 2 * 86_400_000).toISOString();
    const overdueId = await lead('Overdue Olu', '+919811100011', {
      owner_email: counsellor,
      next_follow_up_at: twoDaysAgo,
    });
    await lead('Nobody Nia', '+919811100012', { owner_email: null });
    // The owner's own worklist, for the screenshot: a follow-up missed yesterday and a lead to convert.
    await lead('Arjun Patel', '+919811100014', {
      owner_email: memberOf('owner'),
      next_follow_up_at: new Date(Date.now() - 86_400_000).toISOString(),
    });
    const ownersLead = await lead('Priya Menon', '+919811100013', { owner_email: memberOf('owner') });
    // Enough leads for the list to fill a screen.
    for (let i = 0; i < 30; i++)
      await lead(`Applicant ${String(i).padStart(2, '0')}`, `+9198111002${String(i).padStart(2, '0')}`, {
        owner_email: memberOf('manager'),
      });
    const endpoint = await h.createEndpoint({ url: h.receiver.url(), events: ['lead.created'] });
    await pauseEndpoint(h.services, endpoint.id, 7);

    const context = await launchChromium(t, { width: 1280, bypassCSP: true });
    const page = await context.newPage();
    const signIn = async (role: Role) => {
      await context.clearCookies();
      await page.goto(`${h.baseUrl}/console/sign-in`);
      await page.fill('#f-email', memberOf(role));
      await page.fill('#f-password', PASSWORD);
      await page.click('button[type="submit"]');
      await page.waitForURL(/\/console(\/w\/[^/?]+)?$/);
    };

    for (const role of ROLES) {
      await t.test(`${role}: Today, its navigation and its menus`, async (t) => {
        await page.setViewportSize({ width: 1280, height: 800 });
        await signIn(role);
        await page.goto(base);
        t.match(await page.textContent('h1'), /^Today, \d{4}-\d{2}-\d{2}$/);
        const offered = await page.locator('nav.primary a').allTextContents();
        t.same(
          offered.map((s) => s.trim()),
          [
            'Today',
            'Leads',
            'Applications',
            'Tasks',
            'Invoices',
            'API keys',
            'Webhooks',
            'Members',
            'Audit',
            'Settings',
          ].filter((label) => {
            const op = {
              'API keys': 'keys.view',
              Webhooks: 'webhooks.view',
              Audit: 'audit.verify',
              Settings: 'workspace.settings',
            }[label];
            return !op || can(role, op as Parameters<typeof can>[1]);
          }),
          'the navigation offers what the role may open',
        );
        t.match(await page.textContent('main'), 'Nobody Nia', 'new leads without an owner');
        const endpoints = await page.locator('#endpoints').count();
        t.equal(endpoints, can(role, 'webhooks.resume') ? 1 : 0, 'paused endpoints for owners and admins only');
        if (role === 'counsellor') {
          const line = page.locator('#follow-ups + ul li', { hasText: 'Overdue Olu' });
          t.match(await line.textContent(), /overdue/, 'the overdue badge in words');
          await line.locator('a').click();
          await page.waitForURL(new RegExp(`/leads/${overdueId}$`));
          await page.goto(base);
        }
        // The member's menu: account and sign out, by keyboard.
        await page.locator('details.member summary').focus();
        await page.keyboard.press('Enter');
        t.ok(await page.locator('details.member a[href="/console/account"]').isVisible(), 'the menu opens');
        await accessible(t, page, `${role}: Today at 1280 px`);
        if (role === 'owner') {
          await page.goto(`${base}/leads/${ownersLead}`);
          await page.click('text=Convert Priya Menon to an application');
          await page.click('button:has-text("Convert to an application")'); // the step that asks first
          await page.waitForURL(/done=converted/);
          await page.goto(`${base}/tasks?lead=${ownersLead}`);
          await page.fill('#f-title', 'Send the offer letter checklist');
          await page.fill('#f-due_at', '2030-01-15T11:00');
          await page.click('text=Create the task');
          await page.waitForURL(/tasks/);
          await page.goto(base);
          const main = await page.textContent('main');
          t.match(main, 'Arjun Patel', "the owner's follow-up");
          t.match(main, 'Send the offer letter checklist', "the owner's task");
          t.match(
            main,
            /[A-Z0-9-]+ · Priya Menon ·\s+Profile: Profile review to update/,
            'the case waiting on the owner',
          );
          mkdirSync(SCREENSHOTS, { recursive: true });
          await page.screenshot({ path: path.join(SCREENSHOTS, 'today.png'), fullPage: true });
        }
        await page.setViewportSize({ width: 390, height: 844 });
        await page.goto(base);
        await noSidewaysScroll(t, page, `${role}: Today at 390 px`);
        await accessible(t, page, `${role}: Today at 390 px`);
      });
    }

    await t.test('every page of the navigation at 390 px: no sideways scroll, axe clean', async (t) => {
      await page.setViewportSize({ width: 390, height: 844 });
      await signIn('owner');
      await page.goto(base);
      const hrefs = await page
        .locator('nav.primary a')
        .evaluateAll((links) =>
          links.map((a) => (a as unknown as { getAttribute(n: string): string }).getAttribute('href')),
        );
      for (const href of [...hrefs, `/console/w/${slug}/leads/${overdueId}`, '/console/account', '/console']) {
        await page.goto(`${h.baseUrl}${href}`);
        await noSidewaysScroll(t, page, href);
        await accessible(t, page, `${href} at 390 px`);
      }
    });

    await t.test('the lead list at 1280×800: its first results without scrolling, with their count', async (t) => {
      await page.setViewportSize({ width: 1280, height: 800 });
      await signIn('manager');
      await page.goto(`${base}/leads`);
      const firstRow = page.locator('table tbody tr').first();
      const box = await firstRow.boundingBox();
      t.ok(box && box.y + box.height <= 800, `the first result ends at ${box ? box.y + box.height : '?'} px of 800`);
      t.match(await page.textContent('main'), /\d+ leads/, 'the result count');
      await accessible(t, page, 'the lead list at 1280 px');
      await page.screenshot({ path: path.join(SCREENSHOTS, 'lead-list.png') });
    });

    await t.test(
      'the time zone: shown with the UTC instant on hover; a typed time read in it and shown back',
      async (t) => {
        await page.setViewportSize({ width: 1280, height: 800 });
        await signIn('counsellor');
        await page.goto(`${base}/tasks?lead=${overdueId}`);
        await page.fill('#f-title', 'Call about the offer letter');
        await page.fill('#f-due_at', '2026-12-01T09:00');
        await page.click('text=Create the task');
        await page.waitForURL(/tasks/);
        await page.goto(base);
        const due = page.locator('#tasks + ul li', { hasText: 'Call about the offer letter' }).locator('time');
        t.equal(await due.getAttribute('datetime'), '2026-12-01T03:30:00.000Z', '09:00 in India is 03:30 UTC');
        t.equal(await due.getAttribute('title'), '2026-12-01 03:30 UTC', 'the UTC instant on hover');
        t.match(await due.textContent(), /^2026-12-01 09:00 (IST|GMT\+5:30)$/, "shown in the workspace's zone");
        await page.locator('#tasks + ul li', { hasText: 'Call about the offer letter' }).locator('a').first().click();
        t.equal(await page.inputValue('#f-due_at'), '2026-12-01T09:00', 'the form shows the same wall time again');
      },
    );
  },
);
