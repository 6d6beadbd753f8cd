import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import type { Actor } from '../events/types.js';
import type { Queryable } from '../storage/postgres.js';
import { findWorkspace } from '../workspaces/repository.js';
import type { Workspace } from '../workspaces/workspace.js';
import { ApiError } from './errors.js';

function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}

/** Compares two secrets in constant time (hashing first makes the lengths equal). */
export function secretsEqual(presented: string, expected: string): boolean {
  return timingSafeEqual(digest(presented), digest(expected));
}

/**
 * The admin interface is the workspace UI's back end: staff credentials (ADMIN_TOKEN), never API keys. The staff
 * member acting is named by `X-Admin-User` (an email of a user of the workspace) and recorded as the event actor.
 */
export async function authenticateAdmin(request: FastifyRequest, adminToken: string | undefined, sql: Queryable, workspaceIdOrSlug: string): Promise<{ workspace: Workspace; actor: Actor }> {
  const header = request.headers.authorization;
  const presented = header?.startsWith('Bearer ') ? header.slice(7) : undefined;
  if (!adminToken || !presented || !secretsEqual(presented, adminToken)) {
    throw new ApiError(401, 'invalid_admin_token', 'The admin token is missing or wrong');
  }
  const workspace = await findWorkspace(sql, workspaceIdOrSlug);
  if (!workspace) throw new ApiError(404, 'not_found', 'No such workspace');
  const email = String(request.headers['x-admin-user'] ?? '').toLowerCase();
  const user = workspace.settings.users.find((u) => u.email === email && u.active);
  if (!user) throw new ApiError(403, 'unknown_staff_user', 'X-Admin-User must be the email of an active user of the workspace');
  return { workspace, actor: { type: 'user', user_id: user.id, email: user.email, name: user.name } };
}
