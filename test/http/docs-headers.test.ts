import t from 'tap';
import { chromiumSkip, launchChromium } from '../support/chromium.js';
import { startApp } from '../support/app.js';

const DOCS = ['/docs', '/admin/docs'];

t.test('the docs pages answer with a CSP, no framing and no sniffing, and Swagger UI works under them', async (t) => {
  const app = await startApp(t, { config: { adminToken: 'operator-token-for-docs-tests-0123456789abcdef' } });

  t.test('every docs answer carries the headers', async (t) => {
    for (const docs of DOCS) {
      for (const path of [`${docs}`, `${docs}/static/index.html`, `${docs}/static/swagger-ui-bundle.js`]) {
        const answer = await fetch(app.baseUrl + path);
        await answer.arrayBuffer();
        t.equal(answer.status, 200, `${path} is served`);
        const csp = answer.headers.get('content-security-policy') ?? '';
        t.match(csp, /default-src 'none'/, `${path}: a CSP that allows nothing by default`);
        t.match(csp, /frame-ancestors 'none'/, `${path}: never framed`);
        t.match(csp, /script-src 'self'(;|$)/, `${path}: no inline or foreign script`);
        t.equal(answer.headers.get('x-frame-options'), 'DENY', `${path}: X-Frame-Options`);
        t.equal(answer.headers.get('x-content-type-options'), 'nosniff', `${path}: nosniff`);
      }
    }
  });

  t.test('Swagger UI renders both documents in Chromium with no CSP violation', { skip: chromiumSkip() }, async (t) => {
    const context = await launchChromium(t, { width: 1280 });
    for (const docs of DOCS) {
      const page = await context.newPage();
      const violations: string[] = [];
      page.on('console', (message) => {
        if (/Content Security Policy/i.test(message.text())) violations.push(message.text());
        else if (message.type() === 'error') t.comment(`${docs}: ${message.text()}`);
      });
      const failed: string[] = [];
      page.on('requestfailed', (request) => failed.push(request.url()));
      await page.goto(app.baseUrl + docs);
      await page
        .locator('.swagger-ui .info .title')
        .waitFor({ timeout: 20_000 })
        .catch(() => {
          t.comment(`${docs}: ${violations.join(' | ')} ${failed.join(' | ')}`);
        });
      t.match(await page.locator('.swagger-ui .info .title').innerText(), /visa-crm/, `${docs}: the document's title`);
      t.ok((await page.locator('.opblock').count()) > 0, `${docs}: its operations are listed`);
      t.same(violations, [], `${docs}: no CSP violation`);
      t.same(failed, [], `${docs}: every asset loaded`);
      await page.close();
    }
  });
});
