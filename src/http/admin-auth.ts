import { staffContext } from '../commands/run-command.js';
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import type { Actor } from '../events/types.js';
import type { Queryable } from '../storage/postgres.js';
import { findWorkspace } from '../workspaces/repository.js';
import { ACCESS_TOKEN_PREFIX, useAccessToken } from '../identity/access-tokens.js';
import { activeMember } from '../identity/members.js';
import { can, operationOfAdminRoute, type Role } from '../identity/permissions.js';
import type { Workspace } from '../workspaces/workspace.js';
import { CANONICAL_UUID } from './edge-values.js';
import { ApiError, notFound } from './errors.js';
import { failed, failureGate, type AuthDeps } from './auth.js';

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

function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}

/** Compares two secrets in constant time (hashing first makes the lengths equal). */
export function secretsEqual(presented: string, expected: string): boolean {
  return timingSafeEqual(digest(presented), digest(expected));
}

const BEARER = /^Bearer (\S+)$/i;
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
export function adminAuthentication(
  deps: Pick<AuthDeps, 'rateLimits' | 'failureLimit'> & { sql: Queryable; now: () => Date },
) {
  return async function authenticateStaff(request: FastifyRequest): Promise<void> {
    const presented = bearerOf(request);
    if (!presented?.startsWith(ACCESS_TOKEN_PREFIX)) throw invalidToken();
    await failureGate(request, deps);
    const token = await useAccessToken(deps.sql, presented, deps.now());
    if (!token) throw await failed(request, deps, invalidToken);

    // Every admin operation acts on the workspace its path names (`/admin/v1/workspaces/:workspace/…`).
    const ref = String((request.params as { workspace?: unknown }).workspace ?? '');
    const workspace = SLUG.test(ref) || CANONICAL_UUID.test(ref) ? await findWorkspace(deps.sql, ref) : undefined;
    if (!workspace) throw notFound('workspace');
    if (workspace.id !== token.tenant_id)
      throw new ApiError(403, 'forbidden', 'This access token belongs to another workspace');
    const user = activeMember(workspace, token.email);
    if (!user) throw new ApiError(403, 'forbidden', 'The member of this token is not active in the workspace');
    if (user.role !== token.role) throw invalidToken();
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
