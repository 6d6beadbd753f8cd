import { randomUUID } from 'node:crypto';
import type { Queryable } from '../storage/postgres.js';
import { hashPassword } from './passwords.js';

export interface StaffAccount {
  id: string;
  email: string;
  name: string;
  password_hash: string | null;
}

const COLUMNS = 'id, email, name, password_hash';

export async function findAccountByEmail(sql: Queryable, email: string): Promise<StaffAccount | undefined> {
  const result = await sql.query<StaffAccount>(`SELECT ${COLUMNS} FROM staff_accounts WHERE email = $1`, [
    email.toLowerCase(),
  ]);
  return result.rows[0];
}

export async function findAccount(sql: Queryable, id: string): Promise<StaffAccount | undefined> {
  return (await sql.query<StaffAccount>(`SELECT ${COLUMNS} FROM staff_accounts WHERE id = $1`, [id])).rows[0];
}

/** The account of this email, created (without a password) when it does not exist yet. */
export async function ensureAccount(
  sql: Queryable,
  person: { email: string; name: string },
  now: Date,
): Promise<StaffAccount> {
  const email = person.email.toLowerCase();
  await sql.query(
    `INSERT INTO staff_accounts (id, email, name, created_at, updated_at) VALUES ($1, $2, $3, $4, $4)
     ON CONFLICT (email) DO NOTHING`,
    [randomUUID(), email, person.name, now],
  );
  return (await findAccountByEmail(sql, email))!;
}

export async function setPassword(sql: Queryable, accountId: string, password: string, now: Date): Promise<void> {
  await sql.query('UPDATE staff_accounts SET password_hash = $2, updated_at = $3 WHERE id = $1', [
    accountId,
    await hashPassword(password),
    now,
  ]);
}
