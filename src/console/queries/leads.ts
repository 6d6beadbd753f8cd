import type { Lead } from '../../domain/leads/lead.js';
import type { ListPosition } from '../../intake/cursor.js';
import type { Queryable } from '../../storage/postgres.js';

/** The console's lead list: what the filter form may hold, each optional. */
export interface LeadFilter {
  /** Part of a name, phone or email (three characters or more; lowercased here). */
  q?: string;
  stage?: string;
  ownerId?: string | 'none';
  branchId?: string;
  visaType?: string;
  source?: string;
  createdFrom?: Date;
  createdTo?: Date;
  updatedFrom?: Date;
  updatedTo?: Date;
}

export interface LeadListPage {
  leads: Lead[];
  next: ListPosition | null;
}

/** The searched text, exactly as migration 95's trigram index is built over it (or the index is not used). */
const SEARCH_TEXT = `lower(coalesce(body->>'full_name', '') || ' ' || coalesce(phone, '') || ' ' || coalesce(email, ''))`;

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

/**
 * One page of the workspace's live leads, newest change first, by the filter. The SQL is assembled from fixed
 * fragments only (each value a parameter), so that each query names just the conditions it uses and the planner can
 * take the trigram index for a search or leads_sync for the order.
 */
export async function listConsoleLeads(
  sql: Queryable,
  tenantId: string,
  filter: LeadFilter,
  page: { after?: ListPosition; limit: number },
): Promise<LeadListPage> {
  const values: unknown[] = [tenantId];
  const where = ['tenant_id = $1', 'sandbox = false'];
  const add = (fragment: (n: string) => string, value: unknown) => {
    values.push(value);
    where.push(fragment(`$${values.length}`));
  };
  if (filter.q) add((n) => `${SEARCH_TEXT} LIKE ${n}`, likePattern(searchedPart(filter.q)));
  if (filter.stage) add((n) => `body->'stage'->>'key' = ${n}`, filter.stage);
  if (filter.ownerId === 'none') where.push('owner_id IS NULL');
  else if (filter.ownerId) add((n) => `owner_id = ${n}::uuid`, filter.ownerId);
  if (filter.branchId) add((n) => `branch_id = ${n}::uuid`, filter.branchId);
  if (filter.visaType) add((n) => `body->>'visa_type' = ${n}`, filter.visaType);
  if (filter.source) add((n) => `body->'source'->>'key' = ${n}`, filter.source);
  if (filter.createdFrom) add((n) => `created_at >= ${n}`, filter.createdFrom);
  if (filter.createdTo) add((n) => `created_at < ${n}`, filter.createdTo);
  if (filter.updatedFrom) add((n) => `updated_at >= ${n}`, filter.updatedFrom);
  if (filter.updatedTo) add((n) => `updated_at < ${n}`, filter.updatedTo);
  if (page.after) {
    values.push(page.after.updatedAt, page.after.id);
    where.push(`(updated_at, id) < ($${values.length - 1}, $${values.length}::uuid)`);
  }
  values.push(page.limit + 1);
  const result = await sql.query<{ body: Lead; updated_at: Date; id: string }>(
    `SELECT body, updated_at, id FROM leads WHERE ${where.join(' AND ')}
      ORDER BY updated_at DESC, id DESC LIMIT $${values.length}`,
    values,
  );
  const rows = result.rows.slice(0, page.limit);
  const last = rows[rows.length - 1];
  return {
    leads: rows.map((r) => r.body),
    next: result.rows.length > page.limit && last ? { updatedAt: last.updated_at, id: last.id } : null,
  };
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
