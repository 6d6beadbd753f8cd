import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Page } from 'playwright-core';
import t from 'tap';
import { ensureAccount, setPassword } from '../../src/identity/accounts.js';
import { everyRole, memberOf } from '../identity/support.js';
import { accessible, SCREENSHOTS } from '../support/accessibility.js';
import { chromiumSkip, launchChromium } from '../support/chromium.js';
import { clamdSkipReason, pdfFile, TEST_MALWARE_MARKER, TestClamd } from '../support/clamd.js';
import { webhookHarness } from '../webhooks/support/harness.js';
import { waitFor } from '../webhooks/support/receiver.js';
import { PASSWORD } from './support.js';

// Browser globals used by the callbacks handed to page.evaluate (the project compiles without the DOM library).
declare const document: { activeElement: { id: string; textContent: string | null; tagName: string } | null };

/** Tab (only the keyboard) until the focused element is the one wanted; at most `limit` presses. */
async function tabTo(page: Page, wanted: (el: { id: string; text: string; tag: string }) => boolean, limit = 80) {
  for (let i = 0; i < limit; i++) {
    await page.keyboard.press('Tab');
    const el = await page.evaluate(() => ({
      id: document.activeElement?.id ?? '',
      text: (document.activeElement?.textContent ?? '').trim(),
      tag: document.activeElement?.tagName ?? '',
    }));
    if (wanted(el)) return el;
  }
  throw new Error('not reached by Tab');
}

const timelineTypes = (page: Page) => page.locator('ol.timeline > li strong').allTextContents();

t.test(
  'the records pages in Chromium: search, lose, deliver, convert, as of, verify, erase; axe and keyboard',
  { skip: chromiumSkip() },
  async (t) => {
    // The suites' real clamd and a data folder for the documents' files (as test/documents runs them).
    const scanner = clamdSkipReason() ? null : await TestClamd.start();
    if (scanner) t.teardown(() => scanner.close());
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'vcrm-console-e2e-docs-'));
    t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
    const h = await webhookHarness(t, {
      definition: everyRole(),
      config: { dataDir, ...(scanner ? { clamdAddress: scanner.address } : {}) },
    });
    for (const user of h.ws.workspace.settings.users) {
      const account = await ensureAccount(h.pool, user, h.services.now());
      await setPassword(h.pool, account.id, PASSWORD, h.services.now());
    }
    await h.createEndpoint({ url: h.receiver.url('127.0.0.1', '/lost'), events: ['lead.lost'] });
    await h.startWorkers();
    const person = { full_name: 'Farah Siddiqui', phone: '+919845012345', email: 'farah.s@example.org' };
    const created = await h.request('/v1/leads', {
      method: 'POST',
      key: h.ws.live,
      json: { ...person, consent: true },
    });
    const leadId = ((await created.json()) as { id: string }).id;
    const slug = h.ws.workspace.slug;
    mkdirSync(SCREENSHOTS, { recursive: true });

    // axe is injected as an inline script, which the console's CSP (script-src 'self') would rightly refuse.
    const context = await launchChromium(t, { width: 1100, bypassCSP: true });
    const page = await context.newPage();
    await page.goto(`${h.baseUrl}/console/sign-in`);
    await page.fill('#f-email', memberOf('admin'));
    await page.fill('#f-password', PASSWORD);
    await page.click('button[type=submit]');
    await page.waitForURL(/\/console(\/w\/[^/?]+)?$/);

    // The lead list, by keyboard alone: the search field, a part of the phone, Enter, then the lead's link.
    await page.goto(`${h.baseUrl}/console/w/${slug}/leads`);
    await accessible(t, page, 'the lead list');
    await tabTo(page, (el) => el.id === 'f-q');
    await page.keyboard.type('50123');
    await page.keyboard.press('Enter');
    await page.waitForURL(/q=50123/);
    t.equal(await page.locator('tbody tr').count(), 1, 'one lead has 50123 in its phone');
    await page.screenshot({ path: path.join(SCREENSHOTS, 'console-leads.png'), fullPage: true });
    await tabTo(page, (el) => el.text === person.full_name);
    await page.keyboard.press('Enter');
    await page.waitForURL(new RegExp(`/leads/${leadId}$`));
    await accessible(t, page, "a lead's page");

    // The lead's page by keyboard: a note typed and saved, then shown atop the timeline.
    await tabTo(page, (el) => el.id === 'f-note');
    await page.keyboard.type('Asked for a call after six');
    await tabTo(page, (el) => el.text === 'Save the changes');
    await page.keyboard.press('Enter');
    await page.waitForURL(/done=noted/);
    t.match(await page.locator('.notice.status').textContent(), 'The note was added to the timeline.');
    t.equal((await timelineTypes(page))[0], 'Note added', 'the note is on top of the timeline, by its name');

    // Lost with a reason: on top of the timeline, and lead.lost at the HTTPS receiver.
    await page.selectOption('#f-stage', 'lost');
    await page.selectOption('#f-lost_reason', 'not_reachable');
    await page.click('text=Save the changes');
    await page.waitForURL(/done=changed/);
    t.equal((await timelineTypes(page))[0], 'Marked lost');
    t.match(
      await page.locator('ol.timeline > li').first().textContent(),
      /Marked lost: Not reachable \(was at stage New\)/,
      'the move to lost in words',
    );
    const delivered = await waitFor(
      () => h.receiver.requests.find((r) => r.path === '/lost' && r.body.includes(leadId)),
      'lead.lost arrives at the receiver',
    );
    const envelope = JSON.parse(delivered.body) as { event: string; data: { stage: { key: string } } };
    t.equal(envelope.event, 'lead.lost');
    t.equal(envelope.data.stage.key, 'lost');
    await page.screenshot({ path: path.join(SCREENSHOTS, 'console-lead.png'), fullPage: true });

    // Back to contacted, then converted; a module advanced.
    await page.selectOption('#f-stage', 'contacted');
    await page.click('text=Save the changes');
    await page.waitForURL(/done=changed/);
    t.match(
      await page.locator('ol.timeline > li').first().textContent(),
      /Changed stage to Contacted, lost reason to none/,
      'the stage change in words',
    );
    await new Promise((r) => setTimeout(r, 50));
    const beforeConversion = new Date().toISOString();
    await new Promise((r) => setTimeout(r, 50));
    // Converting asks first, on a step of its own; Cancel changes nothing.
    await page.click(`text=Convert ${person.full_name} to an application…`);
    await page.waitForURL(new RegExp(`/leads/${leadId}/convert$`));
    t.match(await page.locator('main').textContent(), /A conversion cannot be undone\./);
    await accessible(t, page, 'the conversion step');
    await page.click('text=Cancel, change nothing');
    await page.waitForURL(new RegExp(`/leads/${leadId}$`));
    t.ok(await page.locator(`text=Convert ${person.full_name} to an application…`).isVisible(), 'still a lead');
    await page.click(`text=Convert ${person.full_name} to an application…`);
    await tabTo(page, (el) => el.text === 'Convert to an application');
    await page.keyboard.press('Enter');
    await page.waitForURL(/\/applications\/[0-9a-f-]{36}\?done=converted$/);
    const applicationPath = new URL(page.url()).pathname;
    await page.click('button:has-text("Mark updated"):has-text("Profile review")');
    await page.waitForURL(/done=module/);
    t.match(await page.locator('.notice.status').textContent(), 'The module was changed.');
    t.match(await page.locator('tr:has-text("Profile review")').first().textContent(), /updated/);
    t.ok(
      (await timelineTypes(page)).slice(0, 2).includes('Module updated'),
      'the module update on top (with the stage change it caused)',
    );
    await accessible(t, page, "an application's page");
    await page.screenshot({ path: path.join(SCREENSHOTS, 'console-application.png'), fullPage: true });

    // As of a moment before the conversion: no application yet, the lead unconverted.
    await page.fill('#f-as_of', beforeConversion.replace('Z', ''));
    await page.click('text=Show it as it was');
    await page.waitForURL(/as_of=/);
    const then = page.locator('section.as-of');
    t.match(await then.textContent(), /The application did not exist yet at that moment/);
    t.match(await then.locator('dt:has-text("Converted") + dd').textContent(), 'no');
    await accessible(t, page, "an application's page as of a moment");

    // Recording the outcome asks first, on a page of its own, then says it was recorded.
    await page.goto(`${h.baseUrl}${applicationPath}`);
    await page.selectOption('#f-outcome', 'granted');
    await page.click('button:has-text("Record the outcome…")');
    await page.waitForURL(/\/outcome\?outcome=granted$/);
    t.match(await page.locator('main').textContent(), /will be recorded as granted/);
    await accessible(t, page, 'the outcome step');
    await page.screenshot({ path: path.join(SCREENSHOTS, 'console-outcome-step.png'), fullPage: true });
    await tabTo(page, (el) => el.text === 'Record granted');
    await page.keyboard.press('Enter');
    await page.waitForURL(/done=outcome$/);
    t.match(await page.locator('.notice.status').textContent(), 'The outcome was recorded.');
    t.match(await page.locator('dt:has-text("Outcome") + dd').first().textContent(), 'granted');

    // Tasks and the applications list pass axe too.
    await page.goto(`${h.baseUrl}/console/w/${slug}/tasks?lead=${leadId}`);
    await accessible(t, page, "a lead's tasks");
    await page.goto(`${h.baseUrl}/console/w/${slug}/applications`);
    await accessible(t, page, 'the applications list');
    await page.goto(`${h.baseUrl}/console/w/${slug}/tasks?show=all`);
    await accessible(t, page, 'every task');
    await page.goto(`${h.baseUrl}/console/w/${slug}/documents?lead=${leadId}`);
    await accessible(t, page, "a lead's documents");
    if (scanner) {
      // A clean file and one with the test signature the suite's clamd flags, each with its verdict in words.
      await page.selectOption('#f-type', 'passport');
      await page.setInputFiles('#f-file', {
        name: 'passport.pdf',
        mimeType: 'application/pdf',
        buffer: pdfFile('clean'),
      });
      await page.click('text=Upload and scan');
      await page.waitForURL(/done=available/);
      t.match(await page.locator('tr:has-text("passport.pdf")').textContent(), /Scanned clean and accepted/);
      await page.selectOption('#f-type', 'passport');
      await page.setInputFiles('#f-file', {
        name: 'infected.pdf',
        mimeType: 'application/pdf',
        buffer: pdfFile(TEST_MALWARE_MARKER),
      });
      await page.click('text=Upload and scan');
      t.match(await page.locator('#f-file-error').textContent(), /The virus scan found/);
      t.match(
        await page.locator('tr:has-text("infected.pdf")').textContent(),
        /Refused by the virus scan; the file was deleted/,
      );
      await accessible(t, page, "a lead's documents with their verdicts");
      await page.screenshot({ path: path.join(SCREENSHOTS, 'console-documents.png'), fullPage: true });
    } else t.comment(`documents not uploaded in the browser: ${clamdSkipReason()}`);
    await page.goto(`${h.baseUrl}/console/w/${slug}/invoices?lead=${leadId}`);
    await page.fill('#f-description', 'Counselling package');
    await page.fill('#f-unit_amount', '15,000.50');
    await page.fill('#f-due_date', '2026-12-31');
    await page.click('text=Issue the invoice');
    await page.waitForURL(/done=issued/);
    t.equal(await page.locator('#total').textContent(), '₹15,000.50');
    await accessible(t, page, 'an invoice');
    await page.screenshot({ path: path.join(SCREENSHOTS, 'console-invoice.png'), fullPage: true });

    // A payment, then a refund of part of it: the refund asks first, then says it was recorded.
    await page.fill('#f-amount', '15,000.50');
    await page.click('text=Record the payment');
    await page.waitForURL(/done=paid/);
    t.match(await page.locator('.notice.status').textContent(), 'The payment was recorded.');
    await page.locator('input[name="amount"][id^="refund-"]').fill('500');
    await page.click('button:has-text("Refund…")');
    await page.waitForURL(/\/refunds\?amount=500/);
    t.match(await page.locator('h1').textContent(), /Refund ₹500.00 on invoice/);
    await accessible(t, page, 'the refund step');
    await page.click('button:has-text("Record the refund of ₹500.00")');
    await page.waitForURL(/done=refunded/);
    t.match(await page.locator('.notice.status').textContent(), /The refund was recorded/);
    t.equal(await page.locator('#balance').textContent(), '₹0.00', 'a refund not paid yet leaves the balance');
    await page.click('a:has-text("Mark paid…")');
    await page.waitForURL(/\/refunds\/[0-9a-f-]{36}\/paid$/);
    await accessible(t, page, 'the refund-paid step');
    await page.click('button:has-text("Mark the refund of ₹500.00 paid")');
    await page.waitForURL(/done=refund_paid/);
    t.match(await page.locator('.notice.status').textContent(), 'The refund was marked paid.');
    t.equal(await page.locator('#balance').textContent(), '₹500.00', 'the balance goes up by the refund paid');
    await page.goto(`${h.baseUrl}/console/w/${slug}/invoices`);
    await accessible(t, page, 'every invoice');

    // Verify the chains, then change an event row and see the broken link named.
    await page.goto(`${h.baseUrl}/console/w/${slug}/audit`);
    await accessible(t, page, 'the audit page');
    await page.click('button:has-text("Verify")');
    t.match(await page.locator('#verify-outcome').textContent(), /Every chain verifies/);
    t.ok(await page.locator('button[data-copy="head"]').isVisible(), 'the copy button is shown by its script');
    await accessible(t, page, 'the audit page with a head');
    await page.screenshot({ path: path.join(SCREENSHOTS, 'console-audit.png'), fullPage: true });
    const victim = await h.pool.query<{ id: string }>(
      `SELECT id FROM events WHERE stream_id = $1 AND type = 'lead.lost'`,
      [`lead-${leadId}`],
    );
    await h.pool.query(`UPDATE events SET created_at = created_at + interval '1 second' WHERE id = $1`, [
      victim.rows[0]!.id,
    ]);
    await page.click('button:has-text("Verify")');
    const broken = await page.locator('#verify-outcome').textContent();
    t.match(broken, /A chain is broken/);
    t.match(broken, victim.rows[0]!.id, 'verify names the changed event');
    await accessible(t, page, 'the audit page with a broken link');

    // Erase the person: nothing personal on any page afterwards, and no search finds them.
    await page.goto(`${h.baseUrl}/console/w/${slug}/leads/${leadId}`);
    await page.check('#f-confirm');
    await page.click('button:has-text("Erase this person")');
    await page.waitForURL(/done=erased/);
    for (const p of [
      `/console/w/${slug}/leads/${leadId}`,
      `/console/w/${slug}/leads`,
      applicationPath,
      `/console/w/${slug}/applications`,
      `/console/w/${slug}/tasks?lead=${leadId}`,
      `/console/w/${slug}/invoices?lead=${leadId}`,
      `/console/w/${slug}/invoices`,
      `/console/w/${slug}/documents?lead=${leadId}`,
    ]) {
      await page.goto(`${h.baseUrl}${p}`);
      const text = (await page.content()).toLowerCase();
      for (const personal of ['farah', 'siddiqui', 'farah.s@example.org', '9845012345', 'call after six'])
        t.notOk(text.includes(personal), `${p} shows no ${personal}`);
    }
    for (const part of ['farah', '50123', 'example.org']) {
      await page.goto(`${h.baseUrl}/console/w/${slug}/leads?q=${part}`);
      t.equal(await page.locator('tbody tr').count(), 0, `a search for ${part} finds nobody`);
    }
  },
);
