import { mkdirSync } from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { Webhook } from 'standardwebhooks';
import t from 'tap';
import { pauseEndpoint } from '../../src/commands/webhooks/endpoints.js';
import { ensureAccount, setPassword } from '../../src/identity/accounts.js';
import { RETRY_DELAYS_MS } from '../../src/webhooks/retry-schedule.js';
import { TestClock } from '../support/app.js';
import { accessible, SCREENSHOTS } from '../support/accessibility.js';
import { chromiumSkip, launchChromium } from '../support/chromium.js';
import { resourcePayload, webhookHarness } from '../webhooks/support/harness.js';
import { waitFor } from '../webhooks/support/receiver.js';
import { PASSWORD } from './support.js';

// Browser globals used by the callbacks handed to page.evaluate (the project compiles without the DOM library).
declare const document: { activeElement: { id: string } | null };

const OWNER = 'asha@northstar.example';

/** axe-core with the WCAG 2.2 A and AA rules on the page as it is: no violation. */

async function tabTo(page: Page, id: string): Promise<void> {
  for (let i = 0; i < 60; i += 1) {
    await page.keyboard.press('Tab');
    if ((await page.evaluate(() => document.activeElement?.id)) === id) return;
  }
  throw new Error(`#${id} is not reachable with Tab`);
}

t.test('the console in headless Chromium', { skip: chromiumSkip() }, async (t) => {
  t.setTimeout(300_000);
  // A delivery's retries (32 hours) run out on this clock; then it is set back to the real time, so signatures carry
  // timestamps a Standard Webhooks verifier accepts.
  const clock = new TestClock(new Date());
  const failedAt = new Date(clock.now().getTime() - 3600_000);
  const h = await webhookHarness(t, {
    now: clock.now,
    config: { adminToken: 'operator-token-for-e2e-0123456789abcdef' },
  });
  const account = await ensureAccount(h.pool, { email: OWNER, name: 'Asha Rao' }, clock.now());
  await setPassword(h.pool, account.id, PASSWORD, clock.now());
  const port = new URL(h.baseUrl).port;
  // A passkey belongs to a host name, never to an IP address.
  const base = `http://localhost:${port}`;

  h.receiver.reply = () => ({ status: 500, body: 'down' });
  const endpoint = await h.createEndpoint({ url: h.receiver.url(), events: ['document.uploaded'] });
  await h.startWorkers({ random: () => 0.5 });
  // Only events after the endpoint's creation go to it.
  clock.advance(1000);
  const appendedAt = clock.now();
  const failed = await h.appendEvent('document.uploaded', resourcePayload());
  // The first delivery of a process warms its TLS and HTTP client up, which takes long on a loaded machine.
  await waitFor(() => h.receiver.forEvent(failed.id).length === 1, 'first attempt', 60_000);
  for (let i = 0; i < RETRY_DELAYS_MS.length; i++) {
    await waitFor(
      async () => {
        const r = await h.pool.query<{ attempts: number }>(
          'SELECT attempts FROM webhook_deliveries WHERE event_id = $1 AND next_attempt_at IS NOT NULL',
          [failed.id],
        );
        return r.rows[0]?.attempts === i + 1;
      },
      `attempt ${i + 1} recorded`,
    );
    clock.advance(RETRY_DELAYS_MS[i]!);
    await waitFor(() => h.receiver.forEvent(failed.id).length === i + 2, `attempt ${i + 2}`, 30_000);
  }
  await waitFor(async () => {
    const r = await h.pool.query("SELECT 1 FROM webhook_deliveries WHERE event_id = $1 AND status = 'failed'", [
      failed.id,
    ]);
    return r.rows.length === 1;
  }, 'the delivery failed');
  await pauseEndpoint(h.services, endpoint.id, 7);
  // Back to the real time, but never before the event: on a fast machine the retries above run in less than the
  // second the clock was moved on before it, and a "now" before the event leaves it out of "retry failed since".
  clock.current = new Date(Math.max(Date.now(), appendedAt.getTime() + 1000));
  h.receiver.reply = () => ({ status: 200, body: 'ok' });

  const context = await launchChromium(t, { width: 1000 });
  const page = await context.newPage();
  const shot = async (name: string) => {
    mkdirSync(SCREENSHOTS, { recursive: true });
    await page.screenshot({ path: path.join(SCREENSHOTS, `console-${name}.png`), fullPage: true });
  };

  await t.test('sign in with a password, by keyboard', async (t) => {
    await page.goto(`${base}/console/sign-in`);
    await accessible(t, page, 'sign-in');
    await shot('sign-in');
    await tabTo(page, 'f-email');
    await page.keyboard.type(OWNER);
    await page.keyboard.press('Tab');
    await page.keyboard.type(PASSWORD);
    await page.keyboard.press('Enter');
    // A member of one workspace lands on its Today page.
    await page.waitForURL(`${base}/console/w/${h.ws.workspace.slug}`);
    t.match(await page.textContent('main'), 'Today', 'a member of one workspace lands on its Today page');
    await accessible(t, page, 'Today after sign-in');
  });

  await t.test('a secret test key made by keyboard alone, used on /v1/leads, never shown again', async (t) => {
    await page.goto(`${base}/console/w/${h.ws.workspace.slug}/keys`);
    await accessible(t, page, 'keys');
    await tabTo(page, 'f-name');
    await page.keyboard.type('Browser key');
    await page.keyboard.press('Enter');
    await page.waitForSelector('#one-time-value');
    const value = (await page.textContent('#one-time-value'))!.trim();
    t.match(value, /^key_test_[A-Za-z0-9]+$/);
    await page.waitForFunction(() => document.activeElement?.id === 'one-time-value');
    t.pass('focus is on the new key');
    await accessible(t, page, 'new key');
    await shot('new-key');
    await page.reload();
    t.notMatch(await page.textContent('main'), value, 'a reload shows it no more and creates no other key');
    const lead = await h.request('/v1/leads', {
      method: 'POST',
      key: value,
      json: { full_name: 'Browser Tester', email: 'browser.tester@example.org', consent: true },
    });
    t.equal(lead.status, 201, 'the key works on /v1/leads');
    await page.goto(`${base}/console/w/${h.ws.workspace.slug}/keys`);
    await page.reload();
    t.notMatch(await page.content(), value, 'the list never shows the value again');
    await shot('keys');
    await page.click('text=Browser key');
    t.match(await page.textContent('main'), 'Browser Tester', "the test key's sandbox submissions");
    await accessible(t, page, 'test key');
  });

  await t.test('a passkey: added on the account page, then signed in with', async (t) => {
    const cdp = await context.newCDPSession(page);
    await cdp.send('WebAuthn.enable');
    await cdp.send('WebAuthn.addVirtualAuthenticator', {
      options: {
        protocol: 'ctap2',
        transport: 'internal',
        hasResidentKey: true,
        hasUserVerification: true,
        isUserVerified: true,
      },
    });
    await page.goto(`${base}/console/account`);
    await page.click('#add-passkey');
    await page.waitForSelector('text=Passkey added');
    await accessible(t, page, 'account');
    await shot('account');
    // Sign out sits in the member's menu in the header.
    await page.click('details.member summary');
    await page.click('details.member button:has-text("Sign out")');
    await page.waitForURL(`${base}/console/sign-in`);
    await page.click('#passkey-sign-in');
    await page.waitForURL(`${base}/console/w/${h.ws.workspace.slug}`);
    t.match(await page.textContent('main'), 'Today', 'signed in with the passkey, on Today');
  });

  await t.test('webhooks: resume a paused endpoint, retry failed since a time, resend, rotate', async (t) => {
    await page.goto(`${base}/console/w/${h.ws.workspace.slug}/webhooks`);
    await accessible(t, page, 'webhooks');
    await shot('webhooks');
    await page.click(`a[href$="/webhooks/${endpoint.id}"]`);
    t.match(await page.textContent('main'), /Paused/);
    await accessible(t, page, 'paused endpoint');
    await page.click('button:has-text("Resume the endpoint")');
    await page.waitForSelector('text=The endpoint is active again');
    t.match(await page.textContent('main'), /Status\s*active/);

    const since = failedAt.toISOString().slice(0, 16);
    await page.fill('#f-since >> nth=0', since);
    await page.click('button:has-text("Preview")');
    await page.waitForLoadState('load');
    // Read whole, so that a refusal or another count is printed rather than a selector's timeout.
    t.match(await page.textContent('main'), /1 failing deliveries since/, 'the preview counts the failed event');
    await accessible(t, page, 'retry preview');
    await page.click('button:has-text("Retry 1 deliveries")');
    await waitFor(() => h.receiver.forEvent(failed.id).length === 8, 'the failed delivery is sent again');
    t.equal(h.receiver.forEvent(failed.id).at(-1)!.headers['webhook-id'], failed.id, 'with the same event id');

    await page.goto(`${base}/console/w/${h.ws.workspace.slug}/webhooks/${endpoint.id}`);
    // The first delivery's details in the page (the header's menus are details too).
    await page.click('main details summary >> nth=0');
    await page.click('main details[open] a:has-text("Resend this delivery")');
    await accessible(t, page, 'resend confirmation');
    await page.click('button:has-text("Resend this delivery")');
    await page.waitForSelector('text=The delivery is resent');
    await waitFor(() => h.receiver.forEvent(failed.id).length === 9, 'resent: the same event id arrives again');

    await page.click('button:has-text("Rotate the secret")');
    await page.waitForSelector('#one-time-value');
    const secret = (await page.textContent('#one-time-value'))!.trim();
    await accessible(t, page, 'the new secret, shown once');
    await page.click('a:has-text("Back to the endpoint")');
    t.match(await page.textContent('main'), /previous secret keeps signing/);
    await shot('endpoint');
    await accessible(t, page, 'endpoint after rotation');
    const before = h.receiver.requests.length;
    await page.click('button:has-text("Send a test event")');
    const test = await waitFor(
      () => h.receiver.requests.slice(before).find((r) => r.body.includes('webhook.test')),
      'webhook.test',
    );
    const headers = Object.fromEntries(Object.entries(test.headers).map(([k, v]) => [k, String(v)]));
    t.ok(new Webhook(secret).verify(test.body, headers), 'the new secret verifies');
    t.ok(new Webhook(endpoint.secret).verify(test.body, headers), 'and the old one, during the overlap');

    await page.goto(`${base}/console/w/${h.ws.workspace.slug}/webhooks/${endpoint.id}?state=failed`);
    // The state is the badge of its cell (a member who may select rows sees a checkbox column first).
    const states = await page.locator('tbody td span.badge').allTextContents();
    t.ok(states.length >= 1, 'the failed delivery is listed');
    t.ok(
      states.every((s) => s.includes('Failed for good')),
      'and only failed ones',
    );
    await page.goto(`${base}/console/w/${h.ws.workspace.slug}/webhooks/${endpoint.id}?event=webhook.test`);
    const tests = await page.locator('tbody td code').allTextContents();
    t.ok(tests.length >= 1 && tests.every((s) => s.trim() === 'webhook.test'), 'filtered by event type');
  });

  await t.test('a recent sign-in confirmed with the passkey', async (t) => {
    clock.advance(11 * 60_000);
    await page.goto(`${base}/console/w/${h.ws.workspace.slug}/keys`);
    t.ok(await page.isVisible('#passkey-confirm'), 'eleven minutes on, a live secret key asks who you are');
    await accessible(t, page, 'keys asking for a recent sign-in');
    await page.click('#passkey-confirm');
    await page.waitForLoadState('load');
    await page.waitForFunction(() => !document.activeElement || true);
    await page.waitForSelector('#passkey-confirm', { state: 'detached' });
    await page.fill('#f-name', 'Live key');
    await page.selectOption('#f-mode', 'live');
    await page.click('button:has-text("Create key")');
    await page.waitForSelector('#one-time-value');
    t.match((await page.textContent('#one-time-value'))!, /^key_live_/, 'made after the passkey confirmed it');
  });

  await t.test('members', async (t) => {
    await page.goto(`${base}/console/w/${h.ws.workspace.slug}/members`);
    await accessible(t, page, 'members');
    await shot('members');
  });
});
