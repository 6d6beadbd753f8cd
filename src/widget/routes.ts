import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { LeadCreate } from '../schemas/lead.js';
import type { AppServices } from '../bootstrap.js';
import type { TypedApp } from '../http/typed-app.js';
import { parseKey } from '../keys/api-key.js';
import { projectRoot } from '../shared/paths.js';
import { demoPage } from './demo-page.js';
import { clientRules } from './rules.js';

export const FORM_SCRIPT_PATH = '/widget/v1/form.js';
export const DEMO_PAGE_PATH = '/widget/demo';
const RULES_SLOT = '{/* rules */}';

/** The form script with the server's LeadCreate limits written into it. */
export function formScript(): string {
  const source = readFileSync(path.join(projectRoot(), 'src', 'widget', 'public', 'form.js'), 'utf8');
  if (!source.includes(RULES_SLOT)) throw new Error(`form.js has lost its ${RULES_SLOT} slot`);
  return source.replace(RULES_SLOT, JSON.stringify(clientRules(LeadCreate)));
}

/**
 * Where the demo page loads the form from. A browser sends no Origin header on a same-origin GET, and the widget
 * configuration needs one, so a page on localhost talks to the service as 127.0.0.1 and the other way round (the
 * `visa-crm demo` keys allow both). Other hosts get the page's own origin.
 */
export function demoServiceBase(hostHeader: string | undefined): string {
  const match = /^(localhost|127\.0\.0\.1)(:\d{1,5})?$/.exec(hostHeader ?? '');
  if (!match) return '';
  return `http://${match[1] === 'localhost' ? '127.0.0.1' : 'localhost'}${match[2] ?? ''}`;
}

export function registerWidgetAssetRoutes(app: TypedApp, services: AppServices): void {
  const script = formScript();
  const etag = `"${createHash('sha256').update(script).digest('base64url').slice(0, 27)}"`;

  app.get(FORM_SCRIPT_PATH, { schema: { hide: true } }, async (request, reply) => {
    reply
      .header('content-type', 'text/javascript; charset=utf-8')
      .header('cache-control', 'public, max-age=300')
      .header('etag', etag)
      // Host pages that isolate themselves (Cross-Origin-Embedder-Policy) may still load it.
      .header('cross-origin-resource-policy', 'cross-origin')
      .header('x-content-type-options', 'nosniff');
    if (request.headers['if-none-match'] === etag) return reply.status(304).send();
    return script;
  });

  if (!services.config.serveDemo) return;
  app.get(
    DEMO_PAGE_PATH,
    { schema: { hide: true, querystring: { type: 'object', properties: { key: { type: 'string' } } } } },
    async (request, reply) => {
      const { key } = request.query as { key?: string };
      const parsed = key ? parseKey(key) : undefined;
      reply.header('content-type', 'text/html; charset=utf-8').header('cache-control', 'no-store');
      // Only a well-formed public key (letters, digits, underscores) is written into the page.
      return demoPage(
        `${demoServiceBase(request.headers.host)}${FORM_SCRIPT_PATH}`,
        parsed?.kind === 'public' ? key! : null,
      );
    },
  );
}
