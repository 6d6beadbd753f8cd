import type { Queryable } from '../../storage/postgres.js';

/** `LIKE` reads % _ and \ as wildcards and escape: a searched part holds them as themselves. */
export const likePattern = (part: string) => `%${part.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

/**
 * What a search looks for. Phones are stored in E.164 (+919876543210), so a part of a phone typed as people write it
 * ("+91 98765", "9876 543210", "(98765) 43-210") is searched for as its digits alone; any other text as it is typed.
 */
export function searchedPart(q: string): string {
  const trimmed = q.trim();
  if (!/^[+\d\s().-]+$/.test(trimmed)) return trimmed;
  const digits = trimmed.replace(/\D/g, '');
  return digits.length >= 3 ? digits : trimmed;
}

/** The applications opened from a lead (a converted lead has one). */
export async function applicationsOfLead(
  sql: Queryable,
  tenantId: string,
  leadId: string,
): Promise<{ id: string; case_ref: string }[]> {
  const result = await sql.query<{ id: string; case_ref: string }>(
    `SELECT id, case_ref FROM applications
      WHERE tenant_id = $1 AND sandbox = false AND lead_id = $2 ORDER BY number`,
    [tenantId, leadId],
  );
  return result.rows;
}

/** Of these emails, those whose account accepted its invitation: it has a password or a passkey. */
export async function acceptedMembers(sql: Queryable, emails: string[]): Promise<Set<string>> {
  if (emails.length === 0) return new Set();
  const result = await sql.query<{ email: string }>(
    `SELECT a.email FROM staff_accounts a
      WHERE a.email = ANY($1::text[])
        AND (a.password_hash IS NOT NULL OR EXISTS (SELECT 1 FROM staff_passkeys p WHERE p.account_id = a.id))`,
    [emails.map((e) => e.toLowerCase())],
  );
  return new Set(result.rows.map((r) => r.email));
}

/** Whether the person of this lead was erased (the erasure ledger, migration 56). */
export async function isErased(sql: Queryable, tenantId: string, leadId: string): Promise<boolean> {
  const result = await sql.query('SELECT 1 FROM erasure_ledger WHERE tenant_id = $1 AND person_id = $2', [
    tenantId,
    leadId,
  ]);
  return (result.rowCount ?? 0) > 0;
}
