import type { Queryable } from '../../storage/postgres.js';

export interface ApplicationListRow {
  id: string;
  number: number;
  case_ref: string;
  lead_id: string;
  stage: string;
  status: string;
  outcome: string | null;
  progress: number;
  full_name: string;
}

/** The workspace's live applications, newest case number first, after `beforeNumber` when paging on. */
export async function listConsoleApplications(
  sql: Queryable,
  tenantId: string,
  page: { beforeNumber?: number; limit: number },
): Promise<{ rows: ApplicationListRow[]; next: number | null }> {
  const result = await sql.query<ApplicationListRow>(
    `SELECT a.id, a.number, a.case_ref, a.lead_id, a.status->'stage'->>'name' AS stage, a.status->>'status' AS status,
            a.status->>'outcome' AS outcome, (a.status->>'progress')::int AS progress,
            coalesce(l.body->>'full_name', '') AS full_name
       FROM applications a LEFT JOIN leads l ON l.id = a.lead_id AND l.tenant_id = a.tenant_id
      WHERE a.tenant_id = $1 AND a.sandbox = false AND ($2::int IS NULL OR a.number < $2)
      ORDER BY a.number DESC LIMIT $3`,
    [tenantId, page.beforeNumber ?? null, page.limit + 1],
  );
  const rows = result.rows.slice(0, page.limit);
  return { rows, next: result.rows.length > page.limit ? rows[rows.length - 1]!.number : null };
}
