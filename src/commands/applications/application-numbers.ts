import type { Queryable } from '../../storage/postgres.js';

/**
 * The next case number of a workspace in one mode (live and sandbox count separately). The counter row stays locked
 * until the converting transaction ends, so concurrent conversions take turns and a rolled-back one gives its number back.
 */
export async function nextApplicationNumber(sql: Queryable, tenantId: string, sandbox: boolean): Promise<number> {
  const result = await sql.query<{ last_number: number }>(
    `INSERT INTO application_numbers (tenant_id, sandbox, last_number) VALUES ($1, $2, 1)
     ON CONFLICT (tenant_id, sandbox) DO UPDATE SET last_number = application_numbers.last_number + 1
     RETURNING last_number`,
    [tenantId, sandbox],
  );
  return result.rows[0]!.last_number;
}
