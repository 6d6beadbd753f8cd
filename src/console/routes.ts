import type { FastifyRequest, RouteOptions } from 'fastify';
import type { AppServices } from '../bootstrap.js';
import { can, PERMISSIONS, type Operation } from '../identity/permissions.js';
import { ConsoleRefusal, memberView, signedInOf, type MemberView } from './context.js';

/**
 * Who may reach a console route, declared in its route options (`config: { console: … }`) and checked once by the
 * console plugin before the handler runs:
 * - `open`: anyone (sign-in, forgot, reset, invitation, the stylesheet);
 * - `account`: any signed-in account (the account pages, the workspace list);
 * - `{ operation }`: a member of the workspace `:slug` names whose role the permission table allows the operation.
 */
export type ConsoleAccess = 'open' | 'account' | { operation: Operation };

declare module 'fastify' {
  interface FastifyContextConfig {
    console?: ConsoleAccess;
  }
  interface FastifyRequest {
    /** The member in view, set by the console plugin on routes declared with an operation. */
    memberInView: MemberView | null;
  }
}

/** The access a console route declared; a route without one is a programming error, refused at start-up. */
export function accessOf(route: Pick<RouteOptions, 'method' | 'url' | 'config'>): ConsoleAccess {
  const access = (route.config as { console?: ConsoleAccess } | undefined)?.console;
  if (!access) throw new Error(`Console route ${String(route.method)} ${route.url} declares no config.console access`);
  return access;
}

/** The one role check of the console: a member whose role may not do the operation gets a refusal in words. */
export async function checkAccess(services: AppServices, request: FastifyRequest): Promise<void> {
  const access = request.routeOptions.config.console;
  if (!access || access === 'open') return;
  if (access === 'account') {
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
