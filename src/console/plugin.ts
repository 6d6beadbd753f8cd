import { registerLeadBulkPages } from './bulk/lead-bulk.js';
import { registerJobPages } from './bulk/job-pages.js';
import { registerApplicationBulkPages } from './bulk/application-bulk.js';
import { registerTaskBulkPages } from './bulk/task-bulk.js';
import cookie from '@fastify/cookie';
import formbody from '@fastify/formbody';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import type { AppServices } from '../bootstrap.js';
import { isCommandError } from '../commands/errors.js';
import { ApiError, commandErrorAnswer, handleError, storageUnavailable, validationFailed } from '../http/errors.js';
import type { TypedApp } from '../http/typed-app.js';
import { csrfTokenMatches, resumeSession } from '../identity/sessions.js';
import { ConsoleRefusal, frameOf, formOf, sendPage, SESSION_COOKIE, sessionCsrf } from './context.js';
import { html } from './html.js';
import { CONSOLE_CSS, notice, page } from './layout.js';
import { registerAccountPages } from './pages/account.js';
import { registerApplicationPages } from './pages/applications.js';
import { registerAuditPages } from './pages/audit.js';
import { registerAuthPages } from './pages/auth.js';
import { registerBoardPages } from './pages/boards.js';
import { registerDocumentPages } from './pages/documents.js';
import { registerInvoicePages } from './pages/invoices.js';
import { registerKeyPages } from './pages/keys.js';
import { registerLeadImportPages } from './pages/lead-import.js';
import { registerLeadPages } from './pages/leads.js';
import { registerMemberPages } from './pages/members.js';
import { registerTaskPages } from './pages/tasks.js';
import { registerPasskeyPages } from './pages/passkeys.js';
import { registerTodayPages } from './pages/today.js';
import { registerNotificationPages } from './pages/notifications.js';
import { registerWebhookPages } from './pages/webhooks.js';
import { registerOneTimeSecretPages } from './one-time-secret.js';
import { checkAccess, REQUIRE_DECLARED_ACCESS, requireDeclaredAccess, type InvalidFormPage } from './routes.js';
import {
  consoleValidatorCompiler,
  fieldErrors,
  undeclaredPartErrors,
  undeclaredPathIsMalformed,
  type FieldErrors,
} from './validation.js';
import { registerWorkspaceSettingsPages } from './pages/workspace-settings.js';
import { registerSearchPages } from './pages/search.js';
import { registerLeadEntryPages } from './pages/lead-entry.js';

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

/**
 * The unsubscribe link of notification mail: a mail client posts to it from no page of ours (RFC 8058 one-click), so
 * it is exempt from the Origin check as well as the token. It can only stop the mail of the member its token names.
 */
const UNSUBSCRIBE = /^\/console\/unsubscribe\/[^/]+\/[^/]+\/[^/]+$/;

/** Forms anyone may post without a session (they start one, or need none); every other form needs the CSRF token. */
const OPEN_FORMS = [
  /^\/console\/sign-in$/,
  /^\/console\/passkeys\/sign-in(\/options)?$/,
  /^\/console\/forgot$/,
  /^\/console\/(invitation|reset)\/[^/]+$/,
  UNSUBSCRIBE,
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
  // A Referer that is no address says nothing: read as absent, so no page has to parse it with care.
  if (request.headers.referer !== undefined && !URL.canParse(request.headers.referer)) delete request.headers.referer;
  const id = request.cookies[SESSION_COOKIE];
  if (!id) return;
  const session = await resumeSession(services.pool, id, services.now());
  if (session) request.signedIn = { sessionId: id, session, csrf: sessionCsrf(id) };
  else reply.clearCookie(SESSION_COOKIE, { path: '/console' });
}

const NO_SUCH_PAGE = 'There is no such page or record in this workspace.';

const isMultipart = (request: FastifyRequest) => /^multipart\//i.test(request.headers['content-type'] ?? '');

/**
 * A form is acted on only if it came from the console itself and, unless it is an open form, with the CSRF token:
 * from the form's `_csrf` field, or for a multipart form (whose file must not be read first) from the action's query.
 */
async function checkForm(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> {
  if (request.method !== 'POST') return undefined;
  const path = request.url.split('?')[0]!;
  if (UNSUBSCRIBE.test(path)) return undefined;
  if (!sameOrigin(request)) throw new ConsoleRefusal(403, 'This form was sent from another site, so nothing was done.');
  if (OPEN_FORMS.some((p) => p.test(path))) return undefined;
  if (!request.signedIn) return reply.redirect('/console/sign-in', 303);
  const token = isMultipart(request) ? (request.query as { _csrf?: unknown })._csrf : formOf(request)._csrf;
  if (!csrfTokenMatches(request.signedIn.sessionId, typeof token === 'string' ? token : undefined))
    throw new ConsoleRefusal(
      403,
      'This form has expired or was not sent from the console; nothing was done. Open the page again.',
    );
  return undefined;
}

/** The form's origin and token, then the route's declared access (src/console/routes.ts), in that order. */
async function guard(services: AppServices, request: FastifyRequest, reply: FastifyReply) {
  const answered = await checkForm(request, reply);
  if (answered) return answered;
  await checkAccess(services, request);
  // A route without a schema for a part still gets no NUL byte, nor a query key given twice, nor an id not a uuid.
  if (undeclaredPathIsMalformed(request)) throw new ConsoleRefusal(404, NO_SUCH_PAGE);
  const undeclared = undeclaredPartErrors(request);
  if (Object.keys(undeclared).length > 0) throw new InvalidRequest(undeclared);
  return undefined;
}

/** A request whose parts no schema declares, refused by `undeclaredPartErrors`. */
class InvalidRequest extends Error {
  readonly errors: FieldErrors;
  constructor(errors: FieldErrors) {
    super('invalid request');
    this.errors = errors;
  }
}

/** A request a script sent as JSON (the passkey buttons): it reads a refusal as JSON, never as a page. */
const postsJson = (request: FastifyRequest) =>
  /^\s*application\/json\s*(;|$)/i.test(request.headers['content-type'] ?? '');

/** The Error code of a console refusal, which says its status in words only. */
const REFUSAL_CODES: Record<number, string> = {
  400: 'invalid_request',
  401: 'not_signed_in',
  403: 'forbidden',
  404: 'not_found',
  409: 'conflict',
};

/**
 * A JSON request's refusal, answered by the API's own handler (src/http/errors.ts) in the spec's Error shape: the
 * one builder of that body, so it always fits the Error schema the routes' answers are serialised by.
 */
function jsonRefusal(error: FastifyError | Error, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  if (error instanceof ConsoleRefusal)
    return handleError(
      new ApiError(error.status, REFUSAL_CODES[error.status] ?? 'refused', error.message),
      request,
      reply,
    );
  if (error instanceof InvalidRequest) return handleError(validationFailed(error.errors), request, reply);
  return handleError(error, request, reply);
}

const fieldName = (field: string) => (field === '' ? 'The request' : field.replaceAll('_', ' '));

/** A refused request: the route's own form with the messages (`onInvalid`), or a page listing each field's. */
async function invalidPage(request: FastifyRequest, reply: FastifyReply, errors: FieldErrors): Promise<FastifyReply> {
  const own = request.routeOptions.config.onInvalid;
  if (own) return ownFormPage(request, reply, own, errors);
  return sendPage(
    reply,
    page(
      frameOf(request, 'This could not be done'),
      html`${notice('Nothing was done: some of what was sent cannot be accepted.', 'alert')}
        <ul class="errors">
          ${Object.entries(errors).map(
            ([field, message]) => html`<li><strong>${fieldName(field)}</strong>: ${message}</li>`,
          )}
        </ul>
        <p><a href="/console">Back to your workspaces</a></p>`,
    ),
    400,
  );
}

/**
 * The route's form again, with the messages. Its record may not exist (a made-up id in the path): the form's refusal
 * of it, a page as its handler's would be, is the answer then.
 */
async function ownFormPage(
  request: FastifyRequest,
  reply: FastifyReply,
  own: InvalidFormPage,
  errors: FieldErrors,
): Promise<FastifyReply> {
  let form: string;
  try {
    form = await own(request, errors);
  } catch (error) {
    return consoleError(error as Error, request, reply);
  }
  return sendPage(reply, form, 400);
}

/** A refusal to try again later, as the API answers it: a shed request's, or a failure of the storage's. */
function unavailableAnswer(error: Error, request: FastifyRequest): ApiError | null {
  if (error instanceof ApiError && error.statusCode === 503) return error;
  return storageUnavailable(error, request);
}

/** What a page says for each of those refusals: nothing to fix but the moment; a save may need checking. */
const UNAVAILABLE_MESSAGES: Record<string, string> = {
  overloaded:
    'The service is too busy to answer right now. Try again in a moment; if you were saving something, check first whether it was saved.',
  service_unavailable:
    'The service cannot reach its database for a moment. Try again in a few seconds; if you were saving something, check first whether it was saved.',
};

/**
 * Any error as a page in words: a refusal's own, a command's refusal, an unreadable form, or a failure logged. A JSON
 * request's is the Error body instead.
 */
async function consoleError(
  error: FastifyError | Error,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<FastifyReply> {
  if (postsJson(request)) return jsonRefusal(error, request, reply);
  if (error instanceof ConsoleRefusal) return errorPage(request, reply, error.status, error.message);
  if (error instanceof InvalidRequest) return invalidPage(request, reply, error.errors);
  if (isCommandError(error)) {
    const answer = commandErrorAnswer(error);
    return errorPage(request, reply, answer.statusCode, answer.message);
  }
  const { validation, validationContext, statusCode } = error as FastifyError;
  // A malformed path names no record, as an unknown one does (and no route's form can be shown for it).
  if (validation && validationContext === 'params') return errorPage(request, reply, 404, NO_SUCH_PAGE);
  if (validation) return invalidPage(request, reply, fieldErrors(request, validation, validationContext));
  if (statusCode && statusCode < 500)
    return errorPage(request, reply, statusCode, 'The form could not be read; nothing was done.');
  const unavailable = unavailableAnswer(error, request);
  if (unavailable) {
    reply.headers(unavailable.headers);
    return errorPage(request, reply, 503, UNAVAILABLE_MESSAGES[unavailable.code] ?? unavailable.message);
  }
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
  scope.get('/assets/console.css', { config: { console: 'open' } }, async (_request, reply) =>
    reply.type('text/css; charset=utf-8').header('cache-control', 'public, max-age=3600').send(CONSOLE_CSS),
  );
  registerAuthPages(scope, services);
  registerAccountPages(scope, services);
  registerOneTimeSecretPages(scope, services);
  registerKeyPages(scope, services);
  registerWebhookPages(scope, services);
  registerMemberPages(scope, services);
  registerLeadImportPages(scope, services);
  registerBoardPages(scope, services);
  registerLeadEntryPages(scope, services);
  registerLeadPages(scope, services);
  registerApplicationPages(scope, services);
  registerAuditPages(scope, services);
  registerTaskPages(scope, services);
  registerInvoicePages(scope, services);
  registerPasskeyPages(scope, services);
  registerDocumentPages(scope, services);
  registerTodayPages(scope, services);
  registerWorkspaceSettingsPages(scope, services);
  registerLeadBulkPages(scope, services);
  registerApplicationBulkPages(scope, services);
  registerTaskBulkPages(scope, services);
  registerJobPages(scope, services);
  registerNotificationPages(scope, services);
  registerSearchPages(scope, services);
}

/**
 * The workspace console under /console: server-rendered pages and ordinary forms, in a scope of its own so its
 * cookie and form parsers, its session hook and its Content-Security-Policy touch nothing else of the service.
 */
export async function registerConsole(
  app: TypedApp,
  services: AppServices,
  options: { requireDeclaredAccess?: boolean } = {},
): Promise<void> {
  const mustDeclare = options.requireDeclaredAccess ?? REQUIRE_DECLARED_ACCESS;
  await app.register(
    async (scope: TypedApp) => {
      // Pages, not API operations: none of them belongs in an OpenAPI document.
      scope.addHook('onRoute', (route) => {
        route.schema = { ...route.schema, hide: true };
      });
      // A route that does not say who may reach it does not start (src/console/routes.ts).
      if (mustDeclare) requireDeclaredAccess(scope);
      scope.setValidatorCompiler(consoleValidatorCompiler(scope.schemaCompilations));
      await scope.register(cookie);
      await scope.register(formbody, { bodyLimit: 64 * 1024 });
      scope.decorateRequest('signedIn', null);
      scope.decorateRequest('memberInView', null);
      scope.addHook('onRequest', async (request, reply) => resumeConsoleSession(services, request, reply));
      // A multipart form is checked before its body (a file) is read; any other once its body is parsed (the token is
      // in it), and either before its schema is, so a forged or forbidden request learns nothing of its fields.
      scope.addHook('onRequest', async (request, reply) => {
        if (isMultipart(request)) return guard(services, request, reply);
        return undefined;
      });
      scope.addHook('preValidation', async (request, reply) => {
        if (!isMultipart(request)) return guard(services, request, reply);
        return undefined;
      });
      scope.setErrorHandler(consoleError);
      scope.setNotFoundHandler((request, reply) =>
        consoleError(new ConsoleRefusal(404, 'There is no such page.'), request, reply),
      );
      registerPages(scope, services);
    },
    { prefix: '/console' },
  );
}
