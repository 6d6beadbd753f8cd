import { staffContext } from '../commands/run-command.js';
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import type { Actor } from '../events/types.js';
import type { AppServices } from '../bootstrap.js';
import { findWorkspace } from '../workspaces/repository.js';
import type { Workspace } from '../workspaces/workspace.js';
import { failed } from './auth.js';
import { CANONICAL_UUID } from './edge-values.js';
import { ApiError, fieldsFromValidation, notFound, validationFailed } from './errors.js';
import { AdminUserHeaders } from './schemas/admin.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The staff member and workspace of an admin request; set by the admin interface's authentication hook. */
    staff: StaffContext | null;
  }
}

export interface StaffContext {
  workspace: Workspace;
  actor: Actor;
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}

/** Compares two secrets in constant time (hashing first makes the lengths equal). */
export function secretsEqual(presented: string, expected: string): boolean {
  return timingSafeEqual(digest(presented), digest(expected));
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
  if (secretsEqual(presented, expected)) return;
  throw await failed(
    request,
    { rateLimits: services.rateLimits, failureLimit: services.config.authFailureLimit },
    refusal,
  );
}

const invalidAdminToken = () => new ApiError(401, 'invalid_admin_token', 'The admin token is missing or wrong');

/** What a workspace can be named by in a path: its slug (src/workspaces/definition.ts) or its id. */
const SLUG = /^[a-z0-9][a-z0-9-]{1,62}$/;

/**
 * The admin interface's one authentication step, run as its `onRequest` hook before anything else of a request:
 * the staff credential (`Authorization: Bearer $ADMIN_TOKEN`, never an API key; see checkOperatorToken), then the
 * staff member acting (`X-Admin-User`, a well-formed email), then that the workspace the path names exists (404) and
 * the email is one of its active users (403). The staff member is recorded as the actor of what the request changes.
 */
export function adminAuthentication(adminToken: string, services: TokenServices & Pick<AppServices, 'pool'>) {
  return async function authenticateStaff(request: FastifyRequest): Promise<void> {
    await checkOperatorToken(request, adminToken, services, invalidAdminToken);

    const validHeaders = request.compileValidationSchema(AdminUserHeaders, 'headers');
    if (!validHeaders(request.headers)) {
      const errors = (validHeaders.errors ?? []) as Parameters<typeof fieldsFromValidation>[0];
      throw validationFailed(fieldsFromValidation(errors, 'x-admin-user'));
    }

    // Every admin operation acts on the workspace its path names (`/admin/v1/workspaces/:workspace/…`).
    const ref = String((request.params as { workspace?: unknown }).workspace ?? '');
    const workspace = SLUG.test(ref) || CANONICAL_UUID.test(ref) ? await findWorkspace(services.pool, ref) : undefined;
    if (!workspace) throw notFound('workspace');
    const email = String(request.headers['x-admin-user']).toLowerCase();
    const user = workspace.settings.users.find((u) => u.email.toLowerCase() === email && u.active);
    if (!user)
      throw new ApiError(
        403,
        'unknown_staff_user',
        'X-Admin-User must be the email of an active user of the workspace',
      );
    request.staff = { workspace, actor: { type: 'user', user_id: user.id, email: user.email, name: user.name } };
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
