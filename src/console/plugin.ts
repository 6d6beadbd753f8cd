import cookie from '@fastify/cookie';
import formbody from '@fastify/formbody';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import type { AppServices } from '../bootstrap.js';
import { isCommandError } from '../commands/errors.js';
import { commandErrorAnswer } from '../http/errors.js';
import type { TypedApp } from '../http/typed-app.js';
import { csrfTokenMatches, resumeSession } from '../identity/sessions.js';
import { ConsoleRefusal, frameOf, formOf, sendPage, SESSION_COOKIE, sessionCsrf } from './context.js';
import { html } from './html.js';
import { CONSOLE_CSS, notice, page } from './layout.js';
import { registerAccountPages } from './pages/account.js';
import { registerApplicationPages } from './pages/applications.js';
import { registerAuditPages } from './pages/audit.js';
import { registerAuthPages } from './pages/auth.js';
import { registerDocumentPages } from './pages/documents.js';
import { registerInvoicePages } from './pages/invoices.js';
import { registerKeyPages } from './pages/keys.js';
import { registerLeadPages } from './pages/leads.js';
import { registerMemberPages } from './pages/members.js';
import { registerTaskPages } from './pages/tasks.js';
import { registerPasskeyPages } from './pages/passkeys.js';
import { registerTodayPages } from './pages/today.js';
import { registerWebhookPages } from './pages/webhooks.js';
import { registerWorkspaceSettingsPages } from './pages/workspace-settings.js';
import { checkAccess } from './routes.js';

/** Only the console's pages: the API and the widget keep their own (cross-origin) rules. */
const CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ');

/** Forms anyone may post without a session (they start one, or need none); every other form needs the CSRF token. */
const OPEN_FORMS = [
  /^\/console\/sign-in$/,
  /^\/console\/passkeys\/sign-in(\/options)?$/,
  /^\/console\/forgot$/,
  /^\/console\/(invitation|reset)\/[^/]+$/,
];

function sameOrigin(request: FastifyRequest): boolean {
  const own = `${request.protocol}://${request.host}`;
  const origin = request.headers.origin;
  if (origin) return origin === own;
  const referer = request.headers.referer;
  if (!referer) return false;
  try {
    return new URL(referer).origin === own;
  } catch {
    return false;
  }
}

/** A refusal page in words: never a stack or a database message. */
function errorPage(request: FastifyRequest, reply: FastifyReply, status: number, message: string): FastifyReply {
  // The passkey script posts JSON and reads the refusal's words from JSON.
  if (request.headers['content-type']?.startsWith('application/json'))
    return reply.status(status).send({ error: 'refused', message });
  return sendPage(
    reply,
    page(
      frameOf(request, 'This could not be done'),
      html`${notice(message, 'alert')}
        <p><a href="/console">Back to your workspaces</a></p>`,
    ),
    status,
  );
}

/** Headers on every console page; then the session of the cookie, if it is still good (a stale cookie is cleared). */
async function resumeConsoleSession(services: AppServices, request: FastifyRequest, reply: FastifyReply) {
  reply.header('content-security-policy', CSP);
  reply.header('x-frame-options', 'DENY');
  reply.header('referrer-policy', 'same-origin');
  reply.header('x-content-type-options', 'nosniff');
  // Pages show members, keys and secrets once: none is kept by a browser or a proxy.
  reply.header('cache-control', 'no-store');
  const id = request.cookies[SESSION_COOKIE];
  if (!id) return;
  const session = await resumeSession(services.pool, id, services.now());
  if (session) request.signedIn = { sessionId: id, session, csrf: sessionCsrf(id) };
  else reply.clearCookie(SESSION_COOKIE, { path: '/console' });
}

/** A form is acted on only if it came from the console itself and, unless it is an open form, with the CSRF token. */
async function checkForm(request: FastifyRequest, reply: FastifyReply) {
  if (request.method !== 'POST') return;
  if (!sameOrigin(request)) throw new ConsoleRefusal(403, 'This form was sent from another site, so nothing was done.');
  const path = request.url.split('?')[0]!;
  if (OPEN_FORMS.some((p) => p.test(path))) return;
  if (!request.signedIn) return reply.redirect('/console/sign-in', 303);
  if (!csrfTokenMatches(request.signedIn.sessionId, formOf(request)._csrf))
    throw new ConsoleRefusal(
      403,
      'This form has expired or was not sent from the console; nothing was done. Open the page again.',
    );
}

/** Any error as a page in words: a refusal's own, a command's refusal, an unreadable form, or a failure logged. */
function consoleError(error: FastifyError | Error, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  if (error instanceof ConsoleRefusal) return errorPage(request, reply, error.status, error.message);
  if (isCommandError(error)) {
    const answer = commandErrorAnswer(error);
    return errorPage(request, reply, answer.statusCode, answer.message);
  }
  const status = (error as FastifyError).statusCode;
  if (status && status < 500) return errorPage(request, reply, status, 'The form could not be read; nothing was done.');
  request.log.error({ err: error }, 'console page failed');
  return errorPage(
    request,
    reply,
    500,
    'Something went wrong on our side; nothing was changed unless a page said so. Try again.',
  );
}

/** Every page of the console, in one scope. */
function registerPages(scope: TypedApp, services: AppServices): void {
  scope.get('/assets/console.css', async (_request, reply) =>
    reply.type('text/css; charset=utf-8').header('cache-control', 'public, max-age=3600').send(CONSOLE_CSS),
  );
  registerAuthPages(scope, services);
  registerAccountPages(scope, services);
  registerKeyPages(scope, services);
  registerWebhookPages(scope, services);
  registerMemberPages(scope, services);
  registerLeadPages(scope, services);
  registerApplicationPages(scope, services);
  registerAuditPages(scope, services);
  registerTaskPages(scope, services);
  registerInvoicePages(scope, services);
  registerPasskeyPages(scope, services);
  registerDocumentPages(scope, services);
  registerTodayPages(scope, services);
  registerWorkspaceSettingsPages(scope, services);
}

/**
 * The workspace console under /console: server-rendered pages and ordinary forms, in a scope of its own so its
 * cookie and form parsers, its session hook and its Content-Security-Policy touch nothing else of the service.
 */
export async function registerConsole(app: TypedApp, services: AppServices): Promise<void> {
  await app.register(
    async (scope: TypedApp) => {
      // Pages, not API operations: none of them belongs in an OpenAPI document.
      scope.addHook('onRoute', (route) => {
        route.schema = { ...route.schema, hide: true };
      });
      await scope.register(cookie);
      await scope.register(formbody, { bodyLimit: 64 * 1024 });
      scope.decorateRequest('signedIn', null);
      scope.decorateRequest('memberInView', null);
      scope.addHook('onRequest', async (request, reply) => resumeConsoleSession(services, request, reply));
      scope.addHook('preHandler', checkForm);
      // After the form's origin and CSRF token: the route's declared access (src/console/routes.ts).
      scope.addHook('preHandler', async (request) => checkAccess(services, request));
      scope.setErrorHandler(consoleError);
      scope.setNotFoundHandler((request, reply) => errorPage(request, reply, 404, 'There is no such page.'));
      registerPages(scope, services);
    },
    { prefix: '/console' },
  );
}
