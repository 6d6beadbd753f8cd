import { mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { PAUSE_THRESHOLD } from '../../src/domain/webhooks/endpoint.js';
import { ensureAccount, setPassword } from '../../src/identity/accounts.js';
import { accessible, SCREENSHOTS } from '../support/accessibility.js';
import { chromiumSkip, launchChromium } from '../support/chromium.js';
import { resourcePayload, webhookHarness } from '../webhooks/support/harness.js';
import { waitFor } from '../webhooks/support/receiver.js';
import { PASSWORD } from './support.js';
import { seedDeliveries } from './lists/support.js';

declare const document: { activeElement: { id: string } | null };

const OWNER = 'asha@northstar.example';

t.test(
  'webhooks in headless Chromium: failing deliveries, endpoint management',
  { skip: chromiumSkip() },
  async (t) => {
    t.setTimeout(300_000);
    const h = await webhookHarness(t);
    const account = await ensureAccount(h.pool, { email: OWNER, name: 'Asha Rao' }, h.services.now());
    await setPassword(h.pool, account.id, PASSWORD, h.services.now());
    // wrong.test reaches the loopback receiver, whose certificate from the test CA names other hosts only.
    h.resolver.table.set('wrong.test', ['127.0.0.1']);
    const endpoint = await h.createEndpoint({ url: h.receiver.url('wrong.test'), events: ['document.uploaded'] });
    await h.startWorkers();
    for (let i = 0; i < PAUSE_THRESHOLD; i++) await h.appendEvent('document.uploaded', resourcePayload());
    await waitFor(
      async () =>
        (await h.pool.query("SELECT 1 FROM webhook_endpoints WHERE id = $1 AND status = 'paused'", [endpoint.id])).rows
          .length === 1,
      'paused after its run of failures',
      60_000,
    );

    const context = await launchChromium(t, { width: 1280 });
    const page = await context.newPage();
    const base = h.baseUrl;
    const w = `${base}/console/w/${h.ws.workspace.slug}/webhooks`;
    await page.goto(`${base}/console/sign-in`);
    await page.fill('#f-email', OWNER);
    await page.fill('#f-password', PASSWORD);
    await page.click('button:has-text("Sign in")');
    await page.waitForURL(/\/console(\/w\/[^/?]+)?$/);

    await t.test('an endpoint failing on TLS: its failures shown as failures', async (t) => {
      await page.goto(w);
      t.match(await page.textContent('main'), new RegExp(`0% of ${PAUSE_THRESHOLD} attempts`));
      await accessible(t, page, 'endpoints');
      await page.click(`a[href$="/webhooks/${endpoint.id}"]`);
      // Read once the endpoint's page has loaded whole: rows read while it streamed in were fewer (36 of 50, once).
      await page.waitForURL(new RegExp(`/webhooks/${endpoint.id}$`), { waitUntil: 'load' });
      // The owner may export: each row starts with its selection box, then event, created, state, attempts, answer.
      const states = await page.locator('tbody td:nth-child(4)').allTextContents();
      t.equal(states.length, PAUSE_THRESHOLD);
      t.ok(
        states.every((s) => s.includes('Waiting for the paused endpoint, after 1 attempt that failed')),
        'every delivery: held by the pause after a failed attempt',
      );
      const answers = await page.locator('tbody td:nth-child(6)').allTextContents();
      t.ok(
        answers.every((a) => /altnames|certificate/i.test(a)),
        'with the TLS error as its last answer',
      );
      mkdirSync(SCREENSHOTS, { recursive: true });
      // Tall enough for the endpoint's state, its last failures and the first rows of its log.
      await page.setViewportSize({ width: 1280, height: 1900 });
      await page.screenshot({ path: path.join(SCREENSHOTS, 'console-webhook-failing.png') });
      await page.setViewportSize({ width: 1280, height: 800 });
      await page.click('main details summary >> nth=0'); // the header's menus are details too
      t.match(await page.textContent('main details[open]'), /No answer: /, 'the receiver gave no answer: said so');
      await accessible(t, page, 'failing deliveries');
      await page.selectOption('#f-state', 'failing');
      await page.click('button:has-text("Filter")');
      t.equal(await page.locator('tbody tr').count(), PAUSE_THRESHOLD, 'the failing filter finds them');
      t.match(page.url(), /state=failing/, 'the filter is in the address');
    });

    await t.test('the log is a list: sort, page size, pages, a selection downloaded as CSV', async (t) => {
      await seedDeliveries(h.pool, {
        tenantId: h.ws.workspace.id,
        endpointId: endpoint.id,
        n: 40,
        now: new Date(Date.now() - 3600_000),
      });
      await page.goto(`${w}/${endpoint.id}`);
      const total = 40 + PAUSE_THRESHOLD;
      t.match(await page.locator('p.count').textContent(), `${total} deliveries; ${Math.min(total, 50)} on this page`);
      await page.getByRole('link', { name: /^Attempts/ }).click();
      await page.waitForURL(/sort=attempts&dir=asc/);
      t.match(await page.locator('th[aria-sort="ascending"]').textContent(), /Attempts/, 'the sort said aloud');
      t.equal((await page.locator('tbody tr td:nth-child(5)').first().textContent())?.trim(), '0', 'fewest first');
      await accessible(t, page, 'the delivery log sorted');
      await page.selectOption('#f-size-deliveries', '25');
      await page.getByRole('button', { name: 'Show' }).click();
      await page.waitForURL(/size=25/);
      t.equal(await page.locator('tbody tr').count(), 25, '25 a page');
      await page.getByRole('link', { name: 'Next 25' }).click();
      await page.waitForURL(/after=/);
      t.equal(await page.locator('tbody tr').count(), Math.min(total - 25, 25), 'the next 25');
      await page.getByRole('link', { name: 'Previous 25' }).click();
      await page.waitForURL(/before=/);
      t.equal(await page.locator('tbody tr').count(), 25);
      await accessible(t, page, 'the delivery log, a page of 25');
      await page.locator('input[name="ids"]').first().check();
      const download = page.waitForEvent('download');
      await page.getByRole('button', { name: 'Download as CSV' }).click();
      const file = await download;
      t.match(file.suggestedFilename(), /^deliveries-[a-z0-9-]+-\d{4}-\d\d-\d\d\.csv$/, 'the file downloads');
      const body = readFileSync((await file.path())!, 'utf8');
      t.match(body, /^\uFEFFEvent,Created \(UTC\),State,Attempts,Last answer,Last change \(UTC\),Details\r?\n/);
      t.equal(body.trim().split(/\r?\n/).length, 2, 'the ticked row only');
    });

    await t.test('"retry failed since" previews and runs the replay of the failed events', async (t) => {
      await page.goto(`${w}/${endpoint.id}`);
      // A day back in any zone the workspace may have: after the window's 30-day bound, before every event.
      await page.fill('#f-since', new Date(Date.now() - 86_400_000).toISOString().slice(0, 16));
      await page.click('button:has-text("Preview")');
      await page.waitForURL(/retry-failed\?since=/);
      t.match(
        await page.textContent('main [role="status"]'),
        `${PAUSE_THRESHOLD} failing deliveries since`,
        'the preview counts the failed events (the seeded rows carry no event)',
      );
      await accessible(t, page, 'retry failed preview');
      await page.click(`button:has-text("Retry ${PAUSE_THRESHOLD} deliveries")`);
      await page.waitForSelector(`text=${PAUSE_THRESHOLD} failing deliveries are being sent again.`);
      await accessible(t, page, 'retry failed done');
      const replays = await h.pool.query<{ only_failed: boolean; queued: number; actor: { type: string } }>(
        'SELECT only_failed, queued, actor FROM webhook_replays WHERE endpoint_id = $1',
        [endpoint.id],
      );
      t.equal(replays.rows.length, 1, 'one replay, the same operation as POST /v1/webhooks/{id}/replay');
      t.equal(replays.rows[0]!.only_failed, true);
      t.equal(replays.rows[0]!.queued, PAUSE_THRESHOLD);
      t.equal(replays.rows[0]!.actor.type, 'user', 'recorded with the member as its actor');
      const resends = await h.pool.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM webhook_deliveries WHERE endpoint_id = $1 AND resend_of IS NOT NULL AND status = 'pending'",
        [endpoint.id],
      );
      t.equal(resends.rows[0]!.n, PAUSE_THRESHOLD, 'waiting for the paused endpoint, as the replay said');
    });

    await t.test('add, change, disable and delete an endpoint; the deleted one keeps its log', async (t) => {
      await page.goto(w);
      await page.click('a:has-text("Add an endpoint")');
      await accessible(t, page, 'new endpoint form');
      await page.fill('#f-url', h.receiver.url('hooks.test', '/crm'));
      await page.fill('#f-description', 'CRM sync');
      await page.check('#event-document\\.uploaded');
      await page.click('button:has-text("Add the endpoint")');
      await page.waitForSelector('#one-time-value');
      t.match((await page.textContent('#one-time-value'))!, /^whsec_/, 'the signing secret, shown once');
      await page.waitForFunction(() => document.activeElement?.id === 'one-time-value');
      t.pass('focus moved to the secret');
      t.ok(await page.isVisible('button:has-text("Copy")'), 'with a copy button');
      await accessible(t, page, 'new endpoint secret');
      await page.click('a:has-text("Go to the endpoint")');
      const id = /webhooks\/([0-9a-f-]{36})/.exec(page.url())![1]!;

      await page.click('a:has-text("Change the endpoint")');
      await page.check('#event-document\\.rejected');
      await page.click('button:has-text("Save the changes")');
      await page.waitForSelector('text=The endpoint is changed.');
      t.match(
        await page.textContent('main'),
        /Document uploaded \(document\.uploaded\), Document rejected \(document\.rejected\)/,
        'the events by name, each with its kind',
      );

      await page.click('a:has-text("Disable it")');
      await accessible(t, page, 'disable confirmation');
      await page.click('button:has-text("Disable the endpoint")');
      await page.waitForSelector('text=The endpoint is disabled');
      t.match(await page.textContent('main'), /disabled by Asha Rao/);

      await page.click('a:has-text("Delete it")');
      await accessible(t, page, 'delete confirmation');
      await page.click('button:has-text("Delete the endpoint")');
      await page.waitForSelector('text=The endpoint is deleted.');
      await accessible(t, page, 'endpoints with a deleted one');
      await page.click(`a[href$="/webhooks/${id}"]`);
      t.match(await page.textContent('main'), /Deleted at .* Its delivery log is kept until/);
    });
  },
);
