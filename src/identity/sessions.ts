import type { Queryable } from '../storage/postgres.js';
import { IDENTITY_POLICY } from './policy.js';
import { derived, newSecret, sameSecret, secretHash } from './secrets.js';

export interface StaffSession {
  account_id: string;
  email: string;
  name: string;
  created_at: Date;
  last_seen_at: Date;
  authenticated_at: Date;
  workspace_id: string | null;
  /** When a passkey was last used in this session (null: a password opened it and no passkey was used since). */
  passkey_at: Date | null;
  /** The address it signed in from (failureAddress): re-entering the password inside it counts against that door. */
  address: string;
}

/** A new session for the account: a fresh random id every sign-in (no fixation); only its SHA-256 is stored. */
export async function startSession(
  sql: Queryable,
  accountId: string,
  now: Date,
  client: { userAgent: string; address: string },
  workspaceId: string | null = null,
  byPasskey = false,
): Promise<string> {
  const id = newSecret('');
  await sql.query(
    `INSERT INTO staff_sessions
       (id_hash, account_id, created_at, last_seen_at, authenticated_at, workspace_id, user_agent, address, passkey_at)
     VALUES ($1, $2, $3, $3, $3, $4, $5, $6, $7)`,
    [
      secretHash(id),
      accountId,
      now,
      workspaceId,
      client.userAgent.slice(0, 300),
      client.address,
      byPasskey ? now : null,
    ],
  );
  return id;
}

/**
 * The live session of this id, its last use moved to now; undefined (and the row gone) when it is unknown, idle
 * longer than the idle limit or older than the absolute limit.
 */
export async function resumeSession(sql: Queryable, id: string, now: Date): Promise<StaffSession | undefined> {
  const idle = new Date(now.getTime() - IDENTITY_POLICY.sessionIdleMs);
  const born = new Date(now.getTime() - IDENTITY_POLICY.sessionAbsoluteMs);
  const result = await sql.query<StaffSession>(
    `UPDATE staff_sessions s SET last_seen_at = $2
       FROM staff_accounts a
      WHERE s.id_hash = $1 AND a.id = s.account_id AND s.last_seen_at > $3 AND s.created_at > $4
     RETURNING s.account_id, a.email, a.name, s.created_at, s.last_seen_at, s.authenticated_at, s.workspace_id,
               s.passkey_at, s.address`,
    [secretHash(id), now, idle, born],
  );
  if (result.rows[0]) return result.rows[0];
  await endSession(sql, id);
  return undefined;
}

export async function endSession(sql: Queryable, id: string): Promise<void> {
  await sql.query('DELETE FROM staff_sessions WHERE id_hash = $1', [secretHash(id)]);
}

/** Every session of the account ends (a new password, or signing out everywhere). */
export async function endEverySession(sql: Queryable, accountId: string): Promise<void> {
  await sql.query('DELETE FROM staff_sessions WHERE account_id = $1', [accountId]);
}

/** Sign out everywhere: every session of the account ends, and every personal access token it made is revoked. */
export async function signOutEverywhere(sql: Queryable, accountId: string, now: Date): Promise<void> {
  // One statement: no moment where the sessions are gone and a token still works, or the reverse.
  await sql.query(
    `WITH ended AS (DELETE FROM staff_sessions WHERE account_id = $1)
     UPDATE staff_access_tokens SET revoked_at = $2 WHERE account_id = $1 AND revoked_at IS NULL`,
    [accountId, now],
  );
}

/** The password or a passkey was entered again: operations asking for a recent sign-in are open for a while. */
export async function markAuthenticated(sql: Queryable, id: string, now: Date): Promise<void> {
  await sql.query('UPDATE staff_sessions SET authenticated_at = $2 WHERE id_hash = $1', [secretHash(id), now]);
}

/** One of the account's passkeys was used in this session (confirmed or registered): it counts as a passkey session. */
export async function markPasskeyUsed(sql: Queryable, id: string, now: Date): Promise<void> {
  await sql.query('UPDATE staff_sessions SET authenticated_at = $2, passkey_at = $2 WHERE id_hash = $1', [
    secretHash(id),
    now,
  ]);
}

export async function chooseWorkspace(sql: Queryable, id: string, workspaceId: string): Promise<void> {
  await sql.query('UPDATE staff_sessions SET workspace_id = $2 WHERE id_hash = $1', [secretHash(id), workspaceId]);
}

export function isRecentSignIn(session: Pick<StaffSession, 'authenticated_at'>, now: Date): boolean {
  return now.getTime() - session.authenticated_at.getTime() <= IDENTITY_POLICY.recentSignInMs;
}

/** The account's sessions, for the account page (no id: only hashes are stored). */
export async function listSessions(
  sql: Queryable,
  accountId: string,
): Promise<{ created_at: Date; last_seen_at: Date; user_agent: string; current_hash: Buffer }[]> {
  const result = await sql.query<{ created_at: Date; last_seen_at: Date; user_agent: string; current_hash: Buffer }>(
    `SELECT created_at, last_seen_at, user_agent, id_hash AS current_hash FROM staff_sessions
      WHERE account_id = $1 ORDER BY last_seen_at DESC`,
    [accountId],
  );
  return result.rows;
}

/** The session's CSRF token: derived from its secret id, so it is tied to it and needs no storage. */
export function csrfTokenOf(sessionId: string): string {
  return derived(sessionId, 'csrf');
}

export function csrfTokenMatches(sessionId: string, presented: string | undefined): boolean {
  return typeof presented === 'string' && sameSecret(presented, csrfTokenOf(sessionId));
}
