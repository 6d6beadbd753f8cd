import type { Queryable } from '../../storage/postgres.js';

/** What a task, invoice or document is for: a lead or an application. */
export interface SubjectRef {
  lead_id?: string | null;
  application_id?: string | null;
}

/**
 * How the console names the records tasks and invoices are for: a lead by its person's name, an application by its
 * case number and person ("NS-0007 · Kavya Iyer"); an erased person as such. Keyed by the record's id.
 */
export async function subjectNames(sql: Queryable, tenantId: string, refs: SubjectRef[]): Promise<Map<string, string>> {
  const leadIds = [...new Set(refs.map((r) => r.lead_id).filter((id): id is string => Boolean(id)))];
  const applicationIds = [...new Set(refs.map((r) => r.application_id).filter((id): id is string => Boolean(id)))];
  const names = new Map<string, string>();
  if (leadIds.length === 0 && applicationIds.length === 0) return names;
  const result = await sql.query<{ id: string; case_ref: string | null; full_name: string | null }>(
    `SELECT l.id::text, NULL AS case_ref, l.body->>'full_name' AS full_name
       FROM leads l WHERE l.tenant_id = $1 AND l.id = ANY($2::uuid[])
     UNION ALL
     SELECT a.id::text, a.case_ref, l.body->>'full_name'
       FROM applications a LEFT JOIN leads l ON l.tenant_id = a.tenant_id AND l.id = a.lead_id
      WHERE a.tenant_id = $1 AND a.id = ANY($3::uuid[])`,
    [tenantId, leadIds, applicationIds],
  );
  for (const row of result.rows) {
    const person = row.full_name || 'erased person';
    names.set(row.id, row.case_ref ? `${row.case_ref} · ${person}` : person);
  }
  return names;
}

/** The name of one subject, from names read by `subjectNames`. */
export function subjectName(names: Map<string, string>, ref: SubjectRef): string {
  const id = ref.lead_id ?? ref.application_id ?? '';
  return names.get(id) ?? (ref.lead_id ? 'a lead' : 'an application');
}
