import type { FastifyRequest, RouteOptions } from 'fastify';
import type { FieldErrors } from './validation.js';
import type { AppServices } from '../bootstrap.js';
import { can, PERMISSIONS, type Operation } from '../identity/permissions.js';
import { ConsoleRefusal, memberView, signedInOf, type MemberView } from './context.js';

/**
 * Who may reach a console route, declared in its route options (`config: { console: … }`) and checked once by the
 * console plugin before the handler runs:
 * - `open`: anyone (sign-in, forgot, reset, invitation, the stylesheet);
 * - `account`: any signed-in account whose session owes no passkey (the account pages, invitations' answers);
 * - `passkey_step`: any signed-in account, even one whose session still owes a passkey to a workspace that requires
 *   one (the passkey ceremonies that pay it): src/console/pages/passkeys.ts holds every other route back until then;
 * - `{ operation }`: a member of the workspace `:slug` names whose role the permission table allows the operation.
 */
export type ConsoleAccess = 'open' | 'account' | 'passkey_step' | { operation: Operation };

/**
 * A route's page for a request whose query string or body its schema refused (src/console/schemas.ts): the form
 * again, with each field's message by it, answered with 400 by the console's error handler. The request's parts are
 * as sent (not typed: read them with `partsAsText`, src/console/validation.ts); its params are valid (a malformed
 * path is a 404 page), and the access is checked already, so `viewOf` works on a route with an operation. Without
 * one, the refusal is a 400 page listing each field's message.
 */
export type InvalidFormPage = (request: FastifyRequest, errors: FieldErrors) => Promise<string> | string;

/**
 * Whether the console refuses at start-up a route that declares no `config.console` (`accessOf`). Off until every
 * page declares its access; test/console/route-declarations.test.ts lists the routes that do not yet.
 */
export const REQUIRE_DECLARED_ACCESS = true;

declare module 'fastify' {
  interface FastifyContextConfig {
    console?: ConsoleAccess;
    /** The page for a request that failed the route's schema (see `InvalidFormPage`). */
    onInvalid?: InvalidFormPage;
  }
  interface FastifyRequest {
    /** The member in view, set by the console plugin on routes declared with an operation. */
    memberInView: MemberView | null;
  }
}

/**
 * The shape of a console route (every one; see docs/decisions.md, "Console routes"):
 *
 *   app.post(
 *     '/w/:slug/tasks/:id/complete',
 *     {
 *       schema: { params: IdParams, body: CsrfOnly },            // src/console/schemas.ts: typed request parts
 *       config: { console: { operation: 'tasks.change' }, onInvalid: (request, errors) => formAgain(...) },
 *     },
 *     async (request, reply) => { const view = viewOf(request); … },
 *   );
 *
 * In order, for every console request: the session is resumed (onRequest); a POST must come from the console's own
 * origin and, unless it is an open form, carry the session's CSRF token (`_csrf` in the form; in the action's query
 * string for a multipart form, which is checked in onRequest so no byte of a file is read first); the declared
 * access is checked; then the schema, whose refusal is a 400 page (`onInvalid`, or a list of the fields' messages).
 */

/** The access a console route declared; a route without one is a programming error, refused at start-up. */
export function accessOf(route: Pick<RouteOptions, 'method' | 'url' | 'config'>): ConsoleAccess {
  const access = (route.config as { console?: ConsoleAccess } | undefined)?.console;
  if (!access) throw new Error(`Console route ${String(route.method)} ${route.url} declares no config.console access`);
  return access;
}

/** A scope whose routes must each declare their access: one that does not fails its registration, so start-up. */
export function requireDeclaredAccess(scope: {
  addHook(name: 'onRoute', hook: (route: RouteOptions) => void): unknown;
}) {
  scope.addHook('onRoute', (route) => {
    accessOf(route);
  });
}

/** The one role check of the console: a member whose role may not do the operation gets a refusal in words. */
export async function checkAccess(services: AppServices, request: FastifyRequest): Promise<void> {
  const access = request.routeOptions.config.console;
  if (!access || access === 'open') return;
  if (access === 'account' || access === 'passkey_step') {
    signedInOf(request);
    return;
  }
  const view = await memberView(services, request);
  if (!can(view.role, access.operation))
    throw new ConsoleRefusal(
      403,
      `Your role (${view.role}) does not allow this: ${PERMISSIONS[access.operation].description.toLowerCase()}.`,
    );
  request.memberInView = view;
}

/** The member in view of a route declared with an operation (the plugin has checked the role already). */
export function viewOf(request: FastifyRequest): MemberView {
  if (!request.memberInView) throw new Error(`${request.routeOptions.url} is not declared with an operation`);
  return request.memberInView;
}
