import type { Queryable } from '../storage/postgres.js';
import { findAccount } from './accounts.js';
import { membershipsOf } from './members.js';
import { passwordWeakness, type PasswordContext } from './passwords.js';

/** What a new password of this account is checked against: its email and the names of its workspaces. */
export async function passwordContextOf(sql: Queryable, accountId: string): Promise<PasswordContext> {
  const account = await findAccount(sql, accountId);
  if (!account) return { email: '', workspaces: [] };
  const memberships = await membershipsOf(sql, account.email);
  return {
    email: account.email,
    workspaces: memberships.map((m) => ({ name: m.workspace.name, slug: m.workspace.slug })),
  };
}

/**
 * Why a new password (typed twice) may not be set for the account, in a sentence for the form; undefined when it may.
 * Every place a password is set asks this: the invitation, the reset, the change on the account page.
 */
export async function newPasswordProblem(
  sql: Queryable,
  accountId: string,
  password: string,
  confirm: string,
): Promise<string | undefined> {
  const weakness = await passwordWeakness(password, await passwordContextOf(sql, accountId));
  if (weakness) return weakness;
  if (password !== confirm) return 'The two passwords are not the same.';
  return undefined;
}
