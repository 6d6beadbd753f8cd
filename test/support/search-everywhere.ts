import type pg from 'pg';

export interface Hit {
  table: string;
  column: string;
  needle: string;
}

/**
 * Every text, json, jsonb, bytea and array column of every table of the schema, searched for each needle (case
 * insensitive, as text; bytea columns for the needle's UTF-8 bytes).
 */
export async function searchEverywhere(pool: pg.Pool, needles: string[]): Promise<Hit[]> {
  const columns = await pool.query<{ table_name: string; column_name: string; data_type: string }>(
    `SELECT c.table_name, c.column_name, c.data_type
       FROM information_schema.columns c
       JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
      WHERE c.table_schema = current_schema() AND t.table_type = 'BASE TABLE'
        AND c.data_type IN ('text', 'character varying', 'character', 'json', 'jsonb', 'bytea', 'ARRAY', 'USER-DEFINED')`,
  );
  const hits: Hit[] = [];
  for (const c of columns.rows) {
    const column = `"${c.column_name.replace(/"/g, '""')}"`;
    const table = `"${c.table_name.replace(/"/g, '""')}"`;
    for (const needle of needles) {
      const condition =
        c.data_type === 'bytea'
          ? `position(convert_to($1, 'UTF8') in ${column}) > 0`
          : `${column}::text ILIKE '%' || $1 || '%'`;
      const found = await pool.query(`SELECT 1 FROM ${table} WHERE ${condition} LIMIT 1`, [
        needle.replace(/[\\%_]/g, (ch) => `\\${ch}`),
      ]);
      if (found.rowCount) hits.push({ table: c.table_name, column: c.column_name, needle });
    }
  }
  return hits;
}
