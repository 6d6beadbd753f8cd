import type { Task } from '../../http/schemas/task.js';
import type { Queryable } from '../../storage/postgres.js';

/** Which tasks the tasks page lists. */
export interface TaskFilter {
  /** Only the member's own (their user id as assignee). */
  assigneeId?: string;
  /** Only open tasks due before this moment. */
  overdueAt?: Date;
  leadId?: string;
  applicationId?: string;
}

/** The workspace's live tasks by the filter, soonest due first (at most 200). */
export async function listConsoleTasks(sql: Queryable, tenantId: string, filter: TaskFilter): Promise<Task[]> {
  const values: unknown[] = [tenantId];
  const where = ['tenant_id = $1', 'sandbox = false'];
  const add = (fragment: (n: string) => string, value: unknown) => {
    values.push(value);
    where.push(fragment(`$${values.length}`));
  };
  if (filter.assigneeId) add((n) => `body->'assignee'->>'user_id' = ${n}`, filter.assigneeId);
  if (filter.overdueAt) add((n) => `body->>'status' = 'open' AND due_at < ${n}`, filter.overdueAt);
  if (filter.leadId) add((n) => `lead_id = ${n}::uuid`, filter.leadId);
  if (filter.applicationId) add((n) => `application_id = ${n}::uuid`, filter.applicationId);
  const result = await sql.query<{ body: Task }>(
    `SELECT body FROM tasks WHERE ${where.join(' AND ')} ORDER BY due_at, id LIMIT 200`,
    values,
  );
  return result.rows.map((r) => r.body);
}

/**
 * The record a task created from the list is for, as the form names it: a case number (as written, any case), else a
 * lead's email, else a lead's phone with its country code (spaces and dashes ignored). Null when none is found.
 */
export async function subjectNamed(
  sql: Queryable,
  tenantId: string,
  text: string,
): Promise<{ lead_id?: string; application_id?: string } | null> {
  const named = text.trim();
  const digits = named.replace(/[\s().-]/g, '');
  const result = await sql.query<{ kind: 'lead' | 'application'; id: string }>(
    `(SELECT 'application' AS kind, id FROM applications
       WHERE tenant_id = $1 AND sandbox = false AND upper(case_ref) = upper($2) LIMIT 1)
     UNION ALL
     (SELECT 'lead', id FROM leads WHERE tenant_id = $1 AND sandbox = false AND email = lower($2) LIMIT 1)
     UNION ALL
     (SELECT 'lead', id FROM leads WHERE tenant_id = $1 AND sandbox = false AND phone = $3 LIMIT 1)`,
    [tenantId, named, /^\+\d{6,15}$/.test(digits) ? digits : null],
  );
  const found = result.rows[0];
  if (!found) return null;
  return found.kind === 'lead' ? { lead_id: found.id } : { application_id: found.id };
}
