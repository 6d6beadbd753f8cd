import type { Queryable } from '../../storage/postgres.js';

/** The workspaces where the account is an active member, by name, for the header's switcher (migration 150's index). */
export async function workspaceNamesOf(sql: Queryable, email: string): Promise<{ slug: string; name: string }[]> {
  const result = await sql.query<{ slug: string; name: string }>(
    `SELECT slug, name FROM workspaces WHERE settings->'users' @> $1::jsonb ORDER BY name, slug`,
    [JSON.stringify([{ email: email.toLowerCase(), active: true }])],
  );
  return result.rows;
}
