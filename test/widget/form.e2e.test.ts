import { existsSync, mkdirSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import type { Page, Request } from 'playwright-core';
import t from 'tap';
import { projectRoot } from '../../src/shared/paths.js';
import { demoPage } from '../../src/widget/demo-page.js';
import { demoDefinition, seedWorkspace, startApp } from '../support/app.js';
import { chromiumSkip, launchChromium } from '../support/chromium.js';

// Browser globals used by the callbacks handed to page.evaluate (the project compiles without the DOM library).
interface BrowserElement {
  name?: string;
  className: string;
  type: string;
  textContent: string | null;
  options: ArrayLike<{ value: string }>;
  getAttribute(name: string): string | null;
  closest(selector: string): BrowserElement | null;
  blur(): void;
}
declare const document: { activeElement: BrowserElement | null; getElementById(id: string): BrowserElement | null };
declare function getComputedStyle(element: BrowserElement): { backgroundColor: string; color: string };

const SCREENSHOT = path.join(projectRoot(), 'docs', 'images', 'widget-form.png');
const CONSENT = demoDefinition().widget.consent_text;

async function listen(server: http.Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

interface Lead {
  id: string;
  full_name: string;
  email: string | null;
  [field: string]: unknown;
}

t.test('the embeddable form in headless Chromium against the real service', { skip: chromiumSkip() }, async (t) => {
  // A stand-in for a captcha provider's siteverify endpoint: only the token its fake widget hands out passes.
  const verifications: URLSearchParams[] = [];
  const siteverify = http.createServer((request, response) => {
    let raw = '';
    request.on('data', (chunk: Buffer) => (raw += chunk.toString()));
    request.on('end', () => {
      const form = new URLSearchParams(raw);
      verifications.push(form);
      response.setHeader('content-type', 'application/json');
      response.end(JSON.stringify({ success: form.get('response') === 'tok-human', hostname: '127.0.0.1' }));
    });
  });
  const siteverifyUrl = await listen(siteverify);
  t.teardown(() => new Promise<void>((resolve) => siteverify.close(() => resolve())));

  const api = await startApp(t, {
    config: {
      serveDemo: true,
      captchaVerifyUrls: {
        turnstile: `${siteverifyUrl}/siteverify`,
        hcaptcha: `${siteverifyUrl}/siteverify`,
        recaptcha: `${siteverifyUrl}/siteverify`,
      },
    },
  });

  // The consultancy's own website, on another origin than the service: every call the form makes is cross-origin.
  const pages = new Map<string, string>();
  const site = http.createServer((request, response) => {
    const html = pages.get(new URL(request.url ?? '/', 'http://x').pathname);
    response.statusCode = html ? 200 : 404;
    response.setHeader('content-type', 'text/html; charset=utf-8');
    response.end(html ?? 'not found');
  });
  const siteOrigin = await listen(site);
  t.teardown(() => new Promise<void>((resolve) => site.close(() => resolve())));

  const ws = await seedWorkspace(api);
  const scriptUrl = `${api.baseUrl}/widget/v1/form.js`;
  pages.set(
    '/live',
    demoPage(scriptUrl, (await ws.key({ kind: 'public', mode: 'live', origins: [siteOrigin] })).value),
  );
  pages.set(
    '/test',
    demoPage(scriptUrl, (await ws.key({ kind: 'public', mode: 'test', origins: [siteOrigin] })).value),
  );
  const guarded = await seedWorkspace(api, {
    name: 'Guarded Visas',
    widget: {
      ...demoDefinition().widget,
      brand_color: '#7C2D12',
      captcha: { provider: 'turnstile', site_key: 'site-key-123', secret: 'turnstile-secret' },
    },
  });
  pages.set(
    '/captcha',
    demoPage(scriptUrl, (await guarded.key({ kind: 'public', mode: 'live', origins: [siteOrigin] })).value),
  );

  const listLeads = async (key: string): Promise<Lead[]> => {
    const response = await api.request('/v1/leads?limit=100', { key });
    t.equal(response.status, 200, 'GET /v1/leads answers');
    return ((await response.json()) as { data: Lead[] }).data;
  };
  const byEmail = async (key: string, email: string) => (await listLeads(key)).filter((lead) => lead.email === email);

  const context = await launchChromium(t, { width: 1100 });
  const open = async (pathname: string): Promise<{ page: Page; posts: Request[] }> => {
    const page = await context.newPage();
    const posts: Request[] = [];
    page.on('request', (request) => {
      if (request.method() === 'POST' && request.url() === `${api.baseUrl}/v1/leads`) posts.push(request);
    });
    await page.goto(siteOrigin + pathname);
    await page.getByRole('button', { name: 'Send enquiry' }).waitFor();
    return { page, posts };
  };
  const fillPerson = async (page: Page, person: { name: string; email?: string; phone?: string }) => {
    await page.getByLabel('Full name').fill(person.name);
    if (person.email !== undefined) await page.getByLabel('Email', { exact: true }).fill(person.email);
    if (person.phone !== undefined) await page.getByLabel('Phone', { exact: true }).fill(person.phone);
    await page.getByLabel(CONSENT).check();
  };
  const thanks = (page: Page, firstName: string) =>
    page.getByRole('heading', { name: `Thank you, ${firstName}!` }).waitFor();
  const activeName = (page: Page) =>
    page.evaluate(() => document.activeElement?.name || document.activeElement?.className);

  await t.test("renders the workspace's fields in its brand, reachable by keyboard", async (t) => {
    const { page } = await open('/live?utm_source=google');
    t.equal(await page.getByRole('heading', { name: 'Send us your enquiry' }).count(), 1);
    const button = page.getByRole('button', { name: 'Send enquiry' });
    t.equal(
      await button.evaluate((el) => getComputedStyle(el as unknown as BrowserElement).backgroundColor),
      'rgb(15, 118, 110)',
      'the button wears the brand colour #0F766E',
    );
    t.equal(
      await button.evaluate((el) => getComputedStyle(el as unknown as BrowserElement).color),
      'rgb(255, 255, 255)',
      'with readable text on it',
    );
    const optionValues = (label: string) =>
      page
        .getByLabel(label, { exact: true })
        .evaluate((el) => Array.from((el as unknown as BrowserElement).options, (o) => o.value));
    t.same(await optionValues('Country you want to go to'), ['', ...demoDefinition().countries]);
    t.same(await optionValues('Type of visa'), ['', ...demoDefinition().visa_types]);
    t.same(
      await optionValues('Preferred callback time'),
      ['', 'morning', 'evening'],
      'a dropdown custom field with its options',
    );
    t.equal(await page.getByLabel('Budget (lakh INR)').getAttribute('type'), 'number', 'a number custom field');
    t.equal(
      await page.getByLabel('I already have an offer letter').getAttribute('type'),
      'checkbox',
      'a checkbox custom field',
    );
    const description = await page.getByLabel('Preferred callback time').evaluate((el) =>
      ((el as unknown as BrowserElement).getAttribute('aria-describedby') ?? '')
        .split(' ')
        .map((id: string) => document.getElementById(id)?.textContent ?? '')
        .join(' '),
    );
    t.match(description, /When should we call you\?/, 'help text is the field’s accessible description');
    t.equal(await page.getByLabel('Full name').getAttribute('aria-required'), 'true', 'required fields are marked');
    t.equal(
      await page.getByLabel(CONSENT).getAttribute('aria-required'),
      'true',
      'the consent text labels a required checkbox',
    );
    const honeypot = page.locator('input[name=website]');
    t.equal(await honeypot.getAttribute('tabindex'), '-1', 'the honeypot is out of the tab order');
    t.equal(
      await honeypot.evaluate((el) => (el as unknown as BrowserElement).closest('[aria-hidden=true]') !== null),
      true,
      'and hidden from assistive technology',
    );
    t.ok(((await honeypot.boundingBox())?.x ?? 0) < 0, 'and off screen');
    t.equal(await page.getByText('Test mode').count(), 0, 'no test-mode notice with a live key');

    await page.getByLabel('Full name').focus();
    const order: string[] = [];
    for (let i = 0; i < 16; i++) {
      await page.keyboard.press('Tab');
      const name = String(await activeName(page));
      // A month input takes two Tab stops (month, year) inside one element.
      if (order[order.length - 1] !== name) order.push(name);
    }
    t.same(order.slice(0, 10), [
      'email',
      'phone',
      'country_interest',
      'visa_type',
      'intake',
      'custom_fields.preferred_callback',
      'custom_fields.budget_lakhs',
      'custom_fields.has_offer_letter',
      'message',
      'consent',
    ]);
    t.equal(order[10], 'vcf-submit', 'then the submit button');
    t.notOk(order.includes('website'), 'the honeypot never takes focus');
    await page.close();
  });

  await t.test('checks on the client as the server does, and sends nothing while something is wrong', async (t) => {
    const { page, posts } = await open('/live');
    await page.getByRole('button', { name: 'Send enquiry' }).click();
    const summary = page.getByRole('alert');
    await summary.getByText('Please check these 4 fields:').waitFor();
    t.match(await page.locator('[id$="-full_name-error"]').textContent(), 'Enter your full name.');
    t.match(await page.locator('[id$="-email-error"]').textContent(), /email address or a phone number/);
    t.match(await page.locator('[id$="-consent-error"]').textContent(), /agree/);
    t.equal(await page.getByLabel('Full name').getAttribute('aria-invalid'), 'true');
    t.equal(await activeName(page), 'full_name', 'focus moves to the first field in error');

    await fillPerson(page, { name: 'Riya Sharma', email: 'riya@@example' });
    await page.getByLabel('Planned intake').evaluate((el) => ((el as unknown as BrowserElement).type = 'text'));
    await page.getByLabel('Planned intake').fill('2027-13');
    await page.getByRole('button', { name: 'Send enquiry' }).click();
    await summary.getByText('Please check these 2 fields:').waitFor();
    t.match(await page.locator('[id$="-email-error"]').textContent(), /valid email address/);
    t.match(await page.locator('[id$="-intake-error"]').textContent(), /YYYY-MM/);
    t.equal(
      await page.getByLabel('Full name').getAttribute('aria-invalid'),
      null,
      'a corrected field is no longer marked',
    );
    t.equal(posts.length, 0, 'nothing was sent');
    await page.close();
  });

  await t.test("shows the server's field error beside the field", async (t) => {
    const { page, posts } = await open('/live');
    // Whether a phone number exists is known to the server (full numbering plans), not to the form.
    await fillPerson(page, { name: 'Riya Sharma', phone: '12345' });
    const answer = page.waitForResponse(
      (r) => r.url() === `${api.baseUrl}/v1/leads` && r.request().method() === 'POST',
    );
    await page.getByRole('button', { name: 'Send enquiry' }).click();
    const response = await answer;
    t.equal(response.status(), 400);
    t.match(await response.json(), { error: 'validation_failed', fields: { phone: /not a valid phone number/ } });
    const error = page.locator('[id$="-phone-error"]');
    await error.getByText(/not a valid phone number/i).waitFor();
    t.equal(await page.getByLabel('Phone', { exact: true }).getAttribute('aria-invalid'), 'true');
    t.match(
      await page.getByRole('alert').textContent(),
      /Phone: Is not a valid phone number/,
      'and lists it in the announced summary',
    );
    t.equal(await activeName(page), 'phone', 'focus moves to it');
    t.equal(posts.length, 1);
    t.same(await listLeads(ws.live), [], 'no lead was created');
    await page.close();
  });

  await t.test('submits a lead that GET /v1/leads then shows, and saves the screenshot', async (t) => {
    const { page, posts } = await open('/live?utm_source=google&utm_campaign=autumn');
    await fillPerson(page, { name: 'Riya Sharma', email: 'Riya.Sharma@example.org', phone: '+91 98765 43210' });
    await page.getByLabel('Country you want to go to').selectOption('CA');
    await page.getByLabel('Type of visa').selectOption('student');
    await page.getByLabel('Planned intake').fill('2027-09');
    await page.getByLabel('Preferred callback time').selectOption('evening');
    await page.getByLabel('Budget (lakh INR)').fill('25');
    await page.getByLabel('I already have an offer letter').check();
    await page.getByLabel('Message').fill('I would like to study data science in Toronto.');
    await page.evaluate(() => document.activeElement?.blur());
    mkdirSync(path.dirname(SCREENSHOT), { recursive: true });
    await page.screenshot({ path: SCREENSHOT, fullPage: true });
    t.ok(existsSync(SCREENSHOT), `screenshot saved to ${path.relative(projectRoot(), SCREENSHOT)}`);

    await page.getByRole('button', { name: 'Send enquiry' }).click();
    await thanks(page, 'Riya');
    t.equal(
      await page.evaluate(() => document.activeElement?.getAttribute('role')),
      'status',
      'focus moves to the thank-you message',
    );
    t.equal(posts.length, 1);
    const headers = await posts[0]!.allHeaders();
    t.match(headers['idempotency-key'], /^[A-Za-z0-9_.:-]{1,255}$/, 'sent with an Idempotency-Key');
    t.match(headers.authorization, /^Bearer key_live_pub_/, 'with the public key');
    t.equal(headers.origin, siteOrigin, 'from the consultancy’s origin');

    const leads = await byEmail(ws.live, 'riya.sharma@example.org');
    t.equal(leads.length, 1, 'the lead is listed');
    t.match(leads[0], {
      full_name: 'Riya Sharma',
      phone: '+919876543210',
      country_interest: 'CA',
      visa_type: 'student',
      intake: '2027-09',
      custom_fields: { preferred_callback: 'evening', budget_lakhs: 25, has_offer_letter: true },
      landing_page_url: `${siteOrigin}/live?utm_source=google&utm_campaign=autumn`,
      utm: { source: 'google', campaign: 'autumn' },
      consent: { at: String },
    });
    await page.close();
  });

  await t.test('a double click sends one request and creates one lead', async (t) => {
    const { page, posts } = await open('/live');
    await fillPerson(page, { name: 'Arjun Mehta', email: 'arjun.mehta@example.org' });
    await page.getByRole('button', { name: 'Send enquiry' }).dblclick();
    await thanks(page, 'Arjun');
    t.equal(posts.length, 1, 'one request');
    t.equal((await byEmail(ws.live, 'arjun.mehta@example.org')).length, 1, 'one lead');
    await page.close();
  });

  await t.test(
    'an answer lost on the way is retried with the same Idempotency-Key and still makes one lead',
    async (t) => {
      const { page, posts } = await open('/live');
      let firstStatus = 0;
      await page.route(`${api.baseUrl}/v1/leads`, async (route) => {
        if (route.request().method() !== 'POST' || firstStatus !== 0) return route.continue();
        const response = await route.fetch();
        firstStatus = response.status();
        await route.abort('connectionreset');
      });
      await fillPerson(page, { name: 'Kabir Das', email: 'kabir.das@example.org' });
      await page.getByRole('button', { name: 'Send enquiry' }).click();
      await page
        .getByRole('alert')
        .getByText(/could not reach the server/)
        .waitFor();
      t.equal(firstStatus, 201, 'the first attempt reached the service and created the lead');
      await page.unrouteAll();
      const retried = page.waitForResponse(
        (r) => r.url() === `${api.baseUrl}/v1/leads` && r.request().method() === 'POST',
      );
      await page.getByRole('button', { name: 'Send enquiry' }).click();
      t.equal((await retried).status(), 201, 'the retry gets the first answer');
      await thanks(page, 'Kabir');
      const keys = await Promise.all(posts.map(async (p) => (await p.allHeaders())['idempotency-key']));
      t.equal(keys.length, 2);
      t.equal(keys[0], keys[1], 'both attempts carried the same Idempotency-Key');
      t.equal((await byEmail(ws.live, 'kabir.das@example.org')).length, 1, 'one lead');
      await page.close();
    },
  );

  await t.test('a duplicate submission is thanked like any other and adds no lead', async (t) => {
    const { page } = await open('/live');
    await fillPerson(page, { name: 'Riya Sharma', email: 'riya.sharma@example.org' });
    await page.getByLabel('Message').fill('Following up on my enquiry.');
    const answer = page.waitForResponse(
      (r) => r.url() === `${api.baseUrl}/v1/leads` && r.request().method() === 'POST',
    );
    await page.getByRole('button', { name: 'Send enquiry' }).click();
    const response = await answer;
    t.equal(response.status(), 200);
    t.match(await response.json(), { duplicate: true });
    await thanks(page, 'Riya');
    t.equal((await byEmail(ws.live, 'riya.sharma@example.org')).length, 1, 'still one lead for that person');
    await page.close();
  });

  await t.test('a test-mode key says so and writes to the sandbox', async (t) => {
    const { page } = await open('/test');
    await page.getByText(/^Test mode/).waitFor();
    await page.evaluate(
      "document.addEventListener('visa-lead-form:submitted', (e) => { window.submitted = e.detail; })",
    );
    await fillPerson(page, { name: 'Sandy Box', email: 'sandy.box@example.org' });
    await page.getByRole('button', { name: 'Send enquiry' }).click();
    await thanks(page, 'Sandy');
    t.same(
      await page.evaluate('window.submitted'),
      { test_mode: true },
      'the host page hears of the submission (for its analytics)',
    );
    t.equal((await byEmail(ws.test, 'sandy.box@example.org')).length, 1, 'the test key sees it');
    t.equal((await byEmail(ws.live, 'sandy.box@example.org')).length, 0, 'live data does not');
    await page.close();
  });

  await t.test("renders the configured captcha provider's widget and sends its token", async (t) => {
    const page = await context.newPage();
    // A stand-in for the provider's script (no network): the same render/callback/reset API as Turnstile's.
    await page.route('https://challenges.cloudflare.com/turnstile/v0/api.js**', (route) =>
      route.fulfill({
        contentType: 'text/javascript',
        body: `(function () {
          var onload = new URL(document.currentScript.src).searchParams.get('onload');
          window.turnstile = {
            render: function (el, options) {
              var b = document.createElement('button');
              b.type = 'button';
              b.textContent = 'Verify you are human (' + options.sitekey + ')';
              b.onclick = function () { options.callback('tok-human'); };
              el.appendChild(b);
              return 'w1';
            },
            reset: function () {},
          };
          window[onload]();
        })();`,
      }),
    );
    const posts: Request[] = [];
    page.on('request', (r) => {
      if (r.method() === 'POST' && r.url() === `${api.baseUrl}/v1/leads`) posts.push(r);
    });
    await page.goto(`${siteOrigin}/captcha`);
    await fillPerson(page, { name: 'Meera Nair', email: 'meera.nair@example.org' });
    await page.getByRole('button', { name: 'Send enquiry' }).click();
    await page.getByText('Please complete the verification.').first().waitFor();
    t.equal(posts.length, 0, 'not sent before the check is done');
    await page.getByRole('button', { name: 'Verify you are human (site-key-123)' }).click();
    await page.getByRole('button', { name: 'Send enquiry' }).click();
    await thanks(page, 'Meera');
    t.equal(JSON.parse(posts[0]!.postData() ?? '{}').captcha_token, 'tok-human', 'the token rides in captcha_token');
    t.ok(
      verifications.some((v) => v.get('response') === 'tok-human' && v.get('secret') === 'turnstile-secret'),
      'the service verified it with the provider',
    );
    t.equal((await byEmail(guarded.live, 'meera.nair@example.org')).length, 1);
    await page.close();
  });

  await t.test('the development demo page serves the form on the service itself', async (t) => {
    const demoOrigin = `http://localhost:${new URL(api.baseUrl).port}`;
    const key = await ws.key({ kind: 'public', mode: 'test', origins: [demoOrigin] });
    const page = await context.newPage();
    await page.goto(`${demoOrigin}/widget/demo?key=${key.value}`);
    await page.getByRole('button', { name: 'Send enquiry' }).waitFor();
    t.equal(await page.getByText(/^Test mode/).count(), 1);
    await page.close();
  });
});
