import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppServices } from '../bootstrap.js';
import { activeMember } from '../identity/members.js';
import { can, needsRecentSignIn, PERMISSIONS, type Operation, type Role } from '../identity/permissions.js';
import { csrfTokenOf, endSession, isRecentSignIn, markAuthenticated, type StaffSession } from '../identity/sessions.js';
import { checkPassword } from '../identity/sign-in.js';
import { findWorkspace } from '../workspaces/repository.js';
import type { Workspace, WorkspaceUser } from '../workspaces/workspace.js';
import type { PageFrame } from './layout.js';
import { workspaceNamesOf } from './queries/workspaces.js';

export const SESSION_COOKIE = 'vcrm_session';

/** Where a sign-in lands: the workspace list, which sends a member of one workspace on to its Today. */
export const SIGNED_IN_LANDING = '/console?landing=1';

/** The signed-in staff member of a console request (set by the console's session hook). */
export interface SignedIn {
  sessionId: string;
  session: StaffSession;
  csrf: string;
}

declare module 'fastify' {
  interface FastifyRequest {
    signedIn: SignedIn | null;
  }
}

/** A refusal the console shows in words: next to `field` when it names one, else at the top of the page. */
export class ConsoleRefusal extends Error {
  readonly status: number;
  readonly field?: string;
  constructor(status: number, message: string, field?: string) {
    super(message);
    this.status = status;
    this.field = field;
    this.name = 'ConsoleRefusal';
  }
}

/** The member in view: the workspace the path names, where the signed-in account is an active member. */
export interface MemberView {
  signedIn: SignedIn;
  workspace: Workspace;
  member: WorkspaceUser;
  role: Role;
  frame: (title: string, current?: string) => PageFrame;
}

export function signedInOf(request: FastifyRequest): SignedIn {
  if (!request.signedIn) throw new ConsoleRefusal(401, 'Sign in first');
  return request.signedIn;
}

export function frameOf(request: FastifyRequest, title: string, current?: string): PageFrame {
  const s = request.signedIn;
  return { title, current, ...(s ? { who: { name: s.session.name, csrf: s.csrf } } : {}) };
}

/** The workspace of `:slug` as its member sees it; not a member (or no such workspace): not found, alike. */
export async function memberView(services: AppServices, request: FastifyRequest): Promise<MemberView> {
  const signedIn = signedInOf(request);
  const slug = String((request.params as { slug?: string }).slug ?? '');
  const workspace = /^[a-z0-9][a-z0-9-]{1,62}$/.test(slug) ? await findWorkspace(services.pool, slug) : undefined;
  const member = workspace ? activeMember(workspace, signedIn.session.email) : undefined;
  if (!workspace || !member) throw new ConsoleRefusal(404, 'No workspace of yours has this name');
  // The header's switcher lists the member's workspaces.
  const workspaces = await workspaceNamesOf(services.pool, signedIn.session.email);
  return {
    signedIn,
    workspace,
    member,
    role: member.role,
    frame: (title, current) => ({
      title,
      current,
      who: { name: signedIn.session.name, csrf: signedIn.csrf },
      workspace: { slug: workspace.slug, name: workspace.name, role: member.role },
      workspaces,
    }),
  };
}

/** The permission table's answer for the member in view: a refusal in words when their role may not. */
export function allow(view: Pick<MemberView, 'role'>, operation: Operation): void {
  if (!can(view.role, operation))
    throw new ConsoleRefusal(
      403,
      `Your role (${view.role}) does not allow this: ${PERMISSIONS[operation].description.toLowerCase()}.`,
    );
}

/**
 * An operation that asks for a recent sign-in: when the password was not entered lately, the form's `password` field
 * must hold it (its form shows that field; see `needsPassword`).
 */
export async function allowRecent(
  services: AppServices,
  view: Pick<MemberView, 'role' | 'signedIn'>,
  operation: Operation,
  body: Record<string, string | undefined>,
): Promise<void> {
  allow(view, operation);
  if (!needsRecentSignIn(operation)) return;
  await confirmRecentSignIn(services, view.signedIn, body);
}

export async function confirmRecentSignIn(
  services: AppServices,
  signedIn: SignedIn,
  body: Record<string, string | undefined>,
): Promise<void> {
  const now = services.now();
  if (isRecentSignIn(signedIn.session, now)) return;
  const password = body.password ?? '';
  if (!password)
    throw new ConsoleRefusal(403, 'Enter your password again: this asks for a recent sign-in.', 'password');
  await reenterPassword(services, signedIn, password, { field: 'password', wrong: 'That is not your password.' });
  await markAuthenticated(services.pool, signedIn.sessionId, now);
  signedIn.session.authenticated_at = now;
}

/** Why a session ended in the middle of a form: the password was entered wrongly too many times. */
export const SIGNED_OUT_FOR_PASSWORDS =
  'You were signed out: your password was entered wrongly too many times in a row. Sign in again, with a passkey or by resetting your password if you need to.';

/** The session ended because its password was guessed at: the page says so, and the session is gone. */
export class SignedOutRefusal extends ConsoleRefusal {
  constructor() {
    super(401, SIGNED_OUT_FOR_PASSWORDS);
  }
}

/**
 * The password entered again inside a session (a recent sign-in, the current password of a change): it costs from
 * the account's buckets at the door the session came in by, as a sign-in there does (src/identity/sign-in.ts), so a
 * stolen session cannot guess the password; past the limit the session ends.
 */
export async function reenterPassword(
  services: AppServices,
  signedIn: SignedIn,
  password: string,
  refusal: { field: string; wrong: string },
): Promise<void> {
  const result = await checkPassword(
    { sql: services.pool, rateLimits: services.rateLimits, now: services.now },
    { email: signedIn.session.email, password, address: signedIn.session.address },
  );
  switch (result.type) {
    case 'signed_in':
      return;
    case 'refused':
      throw new ConsoleRefusal(403, refusal.wrong, refusal.field);
    case 'throttled':
      await endSession(services.pool, signedIn.sessionId);
      throw new SignedOutRefusal();
  }
}

/** Whether a form for this operation must ask for the password (no recent sign-in). */
export function needsPassword(services: AppServices, signedIn: SignedIn, operation: Operation): boolean {
  return needsRecentSignIn(operation) && !isRecentSignIn(signedIn.session, services.now());
}

export function sessionCsrf(sessionId: string): string {
  return csrfTokenOf(sessionId);
}

/** A console page's answer: HTML, never cached when it may show a secret. */
export function sendPage(reply: FastifyReply, body: string, status = 200): FastifyReply {
  return reply.status(status).type('text/html; charset=utf-8').send(body);
}

/** The form body (urlencoded), as text values. */
export function formOf(request: FastifyRequest): Record<string, string | undefined> {
  const body = request.body;
  if (!body || typeof body !== 'object') return {};
  return Object.fromEntries(
    Object.entries(body as Record<string, unknown>).map(([k, v]) => [k, Array.isArray(v) ? String(v[0]) : String(v)]),
  );
}

/** Every value of a multi-valued form field (checkboxes). */
export function formList(request: FastifyRequest, name: string): string[] {
  const value = (request.body as Record<string, unknown> | undefined)?.[name];
  if (value === undefined) return [];
  return (Array.isArray(value) ? value : [value]).map(String);
}
