import path from 'node:path';
import t from 'tap';
import { settingsOf } from '../../src/notifications/settings.js';
import { memberOf } from '../identity/support.js';
import { accessible, SCREENSHOTS } from '../support/accessibility.js';
import { TestClock } from '../support/app.js';
import { chromiumSkip, launchChromium } from '../support/chromium.js';
import { PASSWORD } from '../console/support.js';
import { capture, mailTo, notifyFixture, unsubscribePathOf } from './support.js';

t.test(
  'My notifications, New for me on Today and the unsubscribe pages in headless Chromium, with axe-core',
  { skip: chromiumSkip() },
  async (t) => {
    t.setTimeout(180_000);
    const clock = new TestClock(new Date());
    const f = await notifyFixture(t, clock);
    const slug = f.ws.workspace.slug;
    const counsellor = memberOf('counsellor');
    const member = f.ws.workspace.settings.users.find((u) => u.email === counsellor)!;
    await capture(f, { full_name: 'Gurpreet Sandhu', phone: '+919811100061' });
    await capture(f, { full_name: 'Navjot Aulakh', phone: '+919811100062' });
    await f.pump();
    const context = await launchChromium(t, { width: 390, bypassCSP: true });
    const page = await context.newPage();

    // Signing in with one workspace lands on its Today, which counts what is new.
    await page.goto(`${f.app.baseUrl}/console/sign-in`);
    await page.fill('#f-email', counsellor);
    await page.fill('#f-password', PASSWORD);
    await page.click('button[type="submit"]');
    await page.waitForURL(`${f.app.baseUrl}/console/w/${slug}`);
    t.match(await page.textContent('#new-for-me'), 'New for me (2)');
    await page.click('text=My notifications and emails');
    await page.waitForURL(`**/console/w/${slug}/notifications`);
    await accessible(t, page, 'My notifications (phone)');
    // Keyboard only: tick the digest, untick at once, save.
    await page.focus('#f-at_once');
    await page.keyboard.press('Space');
    await page.keyboard.press('Tab');
    await page.keyboard.press('Space');
    await page.click('text=Save my choice');
    await page.waitForURL('**/notifications?done=saved');
    t.match(await page.textContent('[role="status"]'), 'Saved');
    t.same(await settingsOf(f.app.pool, f.ws.workspace.id, member.id), { atOnce: false, digest: true });
    await page.setViewportSize({ width: 1280, height: 800 });
    await accessible(t, page, 'My notifications (desktop)');
    await page.screenshot({ path: path.join(SCREENSHOTS, 'console-notifications.png'), fullPage: true });
    await page.click('text=Mark these as seen');
    await page.waitForURL('**/notifications?done=seen');
    t.match(await page.textContent('h2#new'), 'New for me (0)');

    // The unsubscribe link from the mail, in a browser with no session.
    const path0 = unsubscribePathOf(mailTo(f.smtp, counsellor)[0]!);
    const anonymous = await context.browser()?.newContext();
    const stranger = anonymous ? await anonymous.newPage() : await context.newPage();
    await stranger.context().clearCookies();
    await stranger.goto(f.app.baseUrl + path0);
    await accessible(t, stranger, 'Unsubscribe: asks');
    t.same(await settingsOf(f.app.pool, f.ws.workspace.id, member.id), { atOnce: false, digest: true }, 'GET: nothing');
    await stranger.screenshot({ path: path.join(SCREENSHOTS, 'console-unsubscribe.png') });
    await stranger.click('text=Stop these emails');
    await stranger.waitForSelector('text=Done: no more notification emails');
    await accessible(t, stranger, 'Unsubscribe: done');
    t.same(await settingsOf(f.app.pool, f.ws.workspace.id, member.id), { atOnce: false, digest: false });
  },
);
