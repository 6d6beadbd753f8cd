import { staffContext } from '../commands/run-command.js';
import type { FastifyRequest } from 'fastify';
import type { Actor } from '../events/types.js';
import type { AppServices } from '../bootstrap.js';
import type { Queryable } from '../storage/postgres.js';
import { findWorkspace } from '../workspaces/repository.js';
import { ACCESS_TOKEN_PREFIX, useAccessToken } from '../identity/access-tokens.js';
import { activeMember } from '../identity/members.js';
import { hasPasskey, passkeyRequired } from '../identity/passkey-requirement.js';
import { sameSecret } from '../identity/secrets.js';
import { can, operationOfAdminRoute, type Role } from '../identity/permissions.js';
import type { Workspace } from '../workspaces/workspace.js';
import { CANONICAL_UUID } from './edge-values.js';
import { ApiError, notFound } from './errors.js';
import { failed } from './auth.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The staff member and workspace of an admin request; set by the admin interface's authentication hook. */
    staff: StaffContext | null;
  }
}

export interface StaffContext {
  workspace: Workspace;
  actor: Actor;
  role: Role;
  accountId: string;
}

const BEARER = /^Bearer (\S+)$/i;

/** What checking an operator token needs; read on each request, as the app reads its rate-limit store. */
export type TokenServices = Pick<AppServices, 'config' | 'rateLimits'>;

/**
 * Checks an operator token (ADMIN_TOKEN, METRICS_TOKEN) presented as `Authorization: Bearer …`, in constant time. A
 * wrong one counts as a failed authentication of the client's address, as a wrong API key does (429 once the address
 * has none left); a missing one costs nothing and is not counted. The right token is never refused.
 */
export async function checkOperatorToken(
  request: FastifyRequest,
  expected: string,
  services: TokenServices,
  refusal: () => ApiError,
): Promise<void> {
  const presented = BEARER.exec(request.headers.authorization ?? '')?.[1];
  if (!presented) throw refusal();
  if (sameSecret(presented, expected)) return;
  throw await failed(
    request,
    { rateLimits: services.rateLimits, failureLimit: services.config.authFailureLimit },
    refusal,
  );
}

/** What a workspace can be named by in a path: its slug (src/workspaces/definition.ts) or its id. */
const SLUG = /^[a-z0-9][a-z0-9-]{1,62}$/;

const invalidToken = () =>
  new ApiError(401, 'invalid_admin_token', 'The access token is missing, wrong, expired or revoked');

/** The bearer value of a request, if any. */
export function bearerOf(request: FastifyRequest): string | undefined {
  return BEARER.exec(request.headers.authorization ?? '')?.[1];
}

/**
 * The admin interface's one authentication step, run as its `onRequest` hook before anything else of a request: a
 * staff member's personal access token (src/identity/access-tokens.ts; never an API key, never ADMIN_TOKEN), then
 * that the workspace the path names exists (404) and is the token's (403), that its member is still active with the
 * role the token carries (401), and that the permission table lets that role do the route's operation (403). The
 * member is recorded as the actor of what the request changes. A wrong token counts as a failed authentication.
 */
export function adminAuthentication(services: Pick<AppServices, 'pool' | 'now' | 'rateLimits' | 'config'>) {
  const deps = { sql: services.pool as Queryable, now: services.now };
  return async function authenticateStaff(request: FastifyRequest): Promise<void> {
    const presented = bearerOf(request);
    if (!presented) throw invalidToken();
    // A valid token is never refused for what others sent from its address: only a wrong one meets the limit.
    const token = presented.startsWith(ACCESS_TOKEN_PREFIX)
      ? await useAccessToken(deps.sql, presented, deps.now())
      : undefined;
    // The store is read on each request, as the app's own authentication reads it.
    const limits = { rateLimits: services.rateLimits, failureLimit: services.config.authFailureLimit };
    if (!token) throw await failed(request, limits, invalidToken);

    // Every admin operation acts on the workspace its path names (`/admin/v1/workspaces/:workspace/…`).
    const ref = String((request.params as { workspace?: unknown }).workspace ?? '');
    const workspace = SLUG.test(ref) || CANONICAL_UUID.test(ref) ? await findWorkspace(deps.sql, ref) : undefined;
    if (!workspace) throw notFound('workspace');
    if (workspace.id !== token.tenant_id)
      throw new ApiError(403, 'forbidden', 'This access token belongs to another workspace');
    const user = activeMember(workspace, token.email);
    if (!user) throw new ApiError(403, 'forbidden', 'The member of this token is not active in the workspace');
    if (user.role !== token.role) throw invalidToken();
    // A workspace that requires passkeys of this role: only a token made in a session that used a passkey works (a
    // password alone made it otherwise, whatever the account holds now), and while the account still holds one.
    if (
      passkeyRequired(workspace, user.role) &&
      (!token.made_with_passkey || !(await hasPasskey(deps.sql, token.account_id)))
    )
      throw new ApiError(
        403,
        'forbidden',
        'This workspace requires a passkey of this member: make a new token after signing in with a passkey',
      );
    const operation = operationOfAdminRoute(request.routeOptions.schema?.operationId);
    if (!operation || !can(user.role, operation))
      throw new ApiError(403, 'forbidden', `The role ${user.role} may not do this (${operation ?? 'unlisted'})`);
    request.staff = {
      workspace,
      role: user.role,
      accountId: token.account_id,
      actor: { type: 'user', user_id: user.id, email: user.email, name: user.name },
    };
  };
}

/** The staff context of an admin route's request (its hook has run, or the request did not reach the handler). */
export function staffOf(request: FastifyRequest): StaffContext {
  if (!request.staff) throw new Error('an admin route ran without the admin authentication hook');
  return request.staff;
}

/**
 * What an admin operation acts as and on: the staff member's workspace, the mode (`?sandbox=true`, live by default)
 * and the command context with the staff member as actor.
 */
export function staffScope(request: FastifyRequest, sandbox: boolean | undefined, now: Date) {
  const { workspace, actor } = staffOf(request);
  return { workspace, sandbox: sandbox ?? false, context: staffContext(workspace.id, sandbox ?? false, actor, now) };
}
