import type { Readable } from 'node:stream';
import type { Actor } from '../../events/types.js';
import type { Queryable } from '../../storage/postgres.js';
import { FileRefusal } from './file-refusal.js';
import { formulaRisk, readBack } from '../../shared/formula-cells.js';
import { leadBodyOf, proposeMapping, recogniseLayout, type ColumnMapping, type Layout } from './mapping.js';
import { readCsv } from './read-csv.js';

/** The largest CSV file an import takes, in bytes (50 MiB), and the most rows (the header not counted). */
export const MAX_IMPORT_BYTES = 50 * 1024 * 1024;
export const MAX_IMPORT_ROWS = 50_000;
export interface ImportLimits {
  maxBytes: number;
  maxRows: number;
}
export const IMPORT_LIMITS: ImportLimits = { maxBytes: MAX_IMPORT_BYTES, maxRows: MAX_IMPORT_ROWS };
/** An upload is deleted after this long, once its import (if any) finished: its rows hold personal data. */
export const UNUSED_IMPORT_MS = 24 * 60 * 60 * 1000;

/** Rows staged or checked per statement. */
const BATCH = 1000;

export interface LeadImport {
  id: string;
  tenantId: string;
  actor: Actor;
  filename: string;
  sha256: string;
  bytes: number;
  headers: string[];
  rowCount: number;
  layout: Layout;
  mapping: ColumnMapping;
  consent: boolean;
  formulaRows: number;
  checkedAt: Date | null;
  startedAt: Date | null;
  jobId: string | null;
  createdAt: Date;
}

interface ImportRow {
  id: string;
  tenant_id: string;
  actor: Actor;
  filename: string;
  file_sha256: string | null;
  bytes: string;
  headers: string[];
  row_count: number;
  layout: Layout;
  mapping: ColumnMapping;
  consent: boolean;
  formula_rows: number;
  checked_at: Date | null;
  started_at: Date | null;
  job_id: string | null;
  created_at: Date;
}

const COLUMNS =
  'id, tenant_id, actor, filename, file_sha256, bytes, headers, row_count, layout, mapping, consent, formula_rows, checked_at, started_at, job_id, created_at';

const importOf = (r: ImportRow): LeadImport => ({
  id: r.id,
  tenantId: r.tenant_id,
  actor: r.actor,
  filename: r.filename,
  sha256: r.file_sha256 ?? '',
  bytes: Number(r.bytes),
  headers: r.headers,
  rowCount: r.row_count,
  layout: r.layout,
  mapping: r.mapping,
  consent: r.consent,
  formulaRows: r.formula_rows,
  checkedAt: r.checked_at,
  startedAt: r.started_at,
  jobId: r.job_id,
  createdAt: r.created_at,
});

/** A header as the page shows it: blank headers by their column's number. */
const headerOf = (header: string, column: number) => header.trim() || `Column ${column + 1}`;

/**
 * Stages an uploaded CSV file as it streams in: the header row (its layout recognised and a mapping proposed), then
 * each record in batches, never the whole file in memory. A file that cannot be read, has no rows or too many is
 * refused (`FileRefusal`) and nothing of it is kept. Old uploads of the workspace never imported are deleted first.
 */
export async function stageImport(
  sql: Queryable,
  o: { id: string; tenantId: string; actor: Actor; filename: string; now: Date; maxRows?: number },
  file: Readable,
): Promise<LeadImport> {
  // Staged rows hold personal data: an upload is kept a day, unless its import is still to finish.
  await sql.query(
    `DELETE FROM lead_imports i WHERE i.tenant_id = $1 AND i.created_at < $2
       AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.id = i.job_id AND j.tenant_id = $1 AND j.state IN ('queued', 'running'))`,
    [o.tenantId, new Date(o.now.getTime() - UNUSED_IMPORT_MS)],
  );
  const maxRows = o.maxRows ?? MAX_IMPORT_ROWS;
  const csv = readCsv(file);
  let staged = false;
  try {
    let rowNo = 0;
    let batch: { line: number; cells: string[] }[] = [];
    for await (const record of csv.records) {
      if (!staged) {
        await insertImport(sql, o, record.cells.map(headerOf));
        staged = true;
        continue;
      }
      rowNo += 1;
      if (rowNo > maxRows)
        throw new FileRefusal(
          'too_many_rows',
          `The file has more than ${maxRows.toLocaleString('en')} rows (row ${maxRows + 1} is on line ${record.line}): an import takes at most ${maxRows.toLocaleString('en')}. Split the file and import each part.`,
          record.line,
        );
      batch.push(record);
      if (batch.length === BATCH) {
        await insertRows(sql, o.id, rowNo - batch.length + 1, batch);
        batch = [];
      }
    }
    if (!staged) throw new FileRefusal('no_header', 'The file is empty: it has no header row and no rows.', 1);
    if (batch.length > 0) await insertRows(sql, o.id, rowNo - batch.length + 1, batch);
    if (rowNo === 0) throw new FileRefusal('no_rows', 'The file has a header row but no rows under it.', 2);
    const { sha256, bytes } = csv.digest();
    const done = await sql.query<ImportRow>(
      `UPDATE lead_imports SET uploaded = true, file_sha256 = $3, bytes = $4, row_count = $5
       WHERE id = $1 AND tenant_id = $2 RETURNING ${COLUMNS}`,
      [o.id, o.tenantId, sha256, bytes, rowNo],
    );
    return importOf(done.rows[0]!);
  } catch (error) {
    if (staged) await discardImport(sql, o.tenantId, o.id);
    throw error;
  }
}

async function insertImport(
  sql: Queryable,
  o: { id: string; tenantId: string; actor: Actor; filename: string; now: Date },
  headers: string[],
): Promise<void> {
  const layout = recogniseLayout(headers);
  await sql.query(
    `INSERT INTO lead_imports (id, tenant_id, actor, filename, headers, layout, mapping, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
    [
      o.id,
      o.tenantId,
      JSON.stringify(o.actor),
      o.filename,
      JSON.stringify(headers),
      layout,
      JSON.stringify(proposeMapping(headers, layout)),
      o.now,
    ],
  );
}

async function insertRows(sql: Queryable, id: string, first: number, rows: { line: number; cells: string[] }[]) {
  await sql.query(
    `INSERT INTO lead_import_rows (import_id, row_no, line, cells)
     SELECT $1, t.row_no, t.line, t.cells::jsonb FROM unnest($2::int[], $3::int[], $4::text[]) AS t(row_no, line, cells)`,
    [id, rows.map((_, i) => first + i), rows.map((r) => r.line), rows.map((r) => JSON.stringify(r.cells))],
  );
}

/** Deletes an upload and its rows (an import that was refused, or is done with). */
export async function discardImport(sql: Queryable, tenantId: string, id: string): Promise<void> {
  await sql.query('DELETE FROM lead_imports WHERE id = $1 AND tenant_id = $2', [id, tenantId]);
}

/** An upload of the workspace that finished streaming, or none (another workspace's id is none). */
export async function findImport(sql: Queryable, tenantId: string, id: string): Promise<LeadImport | undefined> {
  const found = await sql.query<ImportRow>(
    `SELECT ${COLUMNS} FROM lead_imports WHERE id = $1 AND tenant_id = $2 AND uploaded`,
    [id, tenantId],
  );
  return found.rows[0] ? importOf(found.rows[0]) : undefined;
}

/** The API's verdict on one row's LeadCreate body: its problems by field, and its phone and email as normalised. */
export interface RowVerdict {
  problems: Record<string, string>;
  phone: string | null;
  email: string | null;
}

interface RowToCheck {
  row_no: number;
  cells: string[];
}

/**
 * Checks every row of an upload against a mapping: the LeadCreate body each maps to, the API's problems with it
 * (`verdict`: the same schema and capture rules as POST /v1/leads), the lead its person already has (by phone or
 * email, as the capture finds it) or the earlier row of the same person. Rows are read and written in batches.
 */
export async function checkImport(
  sql: Queryable,
  lead: LeadImport,
  o: { mapping: ColumnMapping; consent: boolean; now: Date },
  verdict: (body: Record<string, unknown>) => RowVerdict,
): Promise<void> {
  const seen = { phone: new Map<string, number>(), email: new Map<string, number>() };
  let formulaRows = 0;
  let after = 0;
  for (;;) {
    const rows = await sql.query<RowToCheck>(
      `SELECT row_no, cells FROM lead_import_rows WHERE import_id = $1 AND row_no > $2 ORDER BY row_no LIMIT $3`,
      [lead.id, after, BATCH],
    );
    if (rows.rows.length === 0) break;
    after = rows.rows.at(-1)!.row_no;
    const checked = rows.rows.map((row) => {
      const body = leadBodyOf(row.cells, o.mapping, o.consent);
      const v = verdict(body);
      if (row.cells.length > lead.headers.length)
        v.problems.row = `has ${row.cells.length} cells where the header row has ${lead.headers.length}: a comma or quote is out of place`;
      if (row.cells.some((cell, column) => o.mapping[column] && formulaRisk(readBack(cell)))) formulaRows += 1;
      const sameAs = v.problems.phone || v.problems.email ? undefined : earlierRow(seen, v, row.row_no);
      return { row, body, v, sameAs };
    });
    const existing = await existingLeads(
      sql,
      lead.tenantId,
      checked.map((c) => c.v),
    );
    await sql.query(
      `UPDATE lead_import_rows r SET body = u.body::jsonb, problems = u.problems::jsonb, duplicate_of = u.duplicate_of,
         same_as_row = u.same_as_row
       FROM unnest($2::int[], $3::text[], $4::text[], $5::uuid[], $6::int[])
         AS u(row_no, body, problems, duplicate_of, same_as_row)
       WHERE r.import_id = $1 AND r.row_no = u.row_no`,
      [
        lead.id,
        checked.map((c) => c.row.row_no),
        checked.map((c) => JSON.stringify(c.body)),
        checked.map((c) => JSON.stringify(c.v.problems)),
        checked.map((c) => existing(c.v) ?? null),
        checked.map((c) => c.sameAs ?? null),
      ],
    );
  }
  await sql.query(
    `UPDATE lead_imports SET mapping = $3, consent = $4, formula_rows = $5, checked_at = $6 WHERE id = $1 AND tenant_id = $2`,
    [lead.id, lead.tenantId, JSON.stringify(o.mapping), o.consent, formulaRows, o.now],
  );
}

/** The earlier row of the file with the same phone or email, if any; the row is remembered for later ones. */
function earlierRow(
  seen: { phone: Map<string, number>; email: Map<string, number> },
  v: RowVerdict,
  rowNo: number,
): number | undefined {
  const earlier = (v.phone && seen.phone.get(v.phone)) || (v.email && seen.email.get(v.email)) || undefined;
  if (v.phone && !seen.phone.has(v.phone)) seen.phone.set(v.phone, rowNo);
  if (v.email && !seen.email.has(v.email)) seen.email.set(v.email, rowNo);
  return earlier;
}

/**
 * The leads the rows' people already have (live leads of the workspace by phone or email, the earliest-created first,
 * as the capture's lookup finds them), one statement per batch; a function from a row's verdict to its lead's id.
 */
async function existingLeads(
  sql: Queryable,
  tenantId: string,
  verdicts: RowVerdict[],
): Promise<(v: RowVerdict) => string | undefined> {
  const phones = [...new Set(verdicts.map((v) => v.phone).filter((p): p is string => Boolean(p)))];
  const emails = [...new Set(verdicts.map((v) => v.email).filter((e): e is string => Boolean(e)))];
  const found = await sql.query<{ id: string; phone: string | null; email: string | null; created_at: Date }>(
    `SELECT id, phone, email, created_at FROM leads WHERE tenant_id = $1 AND NOT sandbox AND phone = ANY($2::text[])
     UNION ALL
     SELECT id, phone, email, created_at FROM leads WHERE tenant_id = $1 AND NOT sandbox AND email = ANY($3::text[])
     ORDER BY created_at, id`,
    [tenantId, phones, emails],
  );
  const byPhone = new Map<string, { id: string; at: number }>();
  const byEmail = new Map<string, { id: string; at: number }>();
  for (const row of found.rows) {
    const entry = { id: row.id, at: row.created_at.getTime() };
    if (row.phone && !byPhone.has(row.phone)) byPhone.set(row.phone, entry);
    if (row.email && !byEmail.has(row.email)) byEmail.set(row.email, entry);
  }
  return (v) => {
    const a = v.phone ? byPhone.get(v.phone) : undefined;
    const b = v.email ? byEmail.get(v.email) : undefined;
    if (a && b) return a.at <= b.at ? a.id : b.id;
    return (a ?? b)?.id;
  };
}

export interface ImportSummary {
  rows: number;
  ready: number;
  withProblems: number;
  duplicates: number;
  /** Rows of this same file (by its SHA-256) that an earlier import of the workspace already made a lead of. */
  importedBefore: number;
}

export async function importSummary(sql: Queryable, lead: LeadImport): Promise<ImportSummary> {
  const counts = await sql.query<{ rows: number; ready: number; problems: number; duplicates: number }>(
    `SELECT count(*)::int AS rows, count(*) FILTER (WHERE problems = '{}'::jsonb)::int AS ready,
       count(*) FILTER (WHERE problems <> '{}'::jsonb)::int AS problems,
       count(*) FILTER (WHERE problems = '{}'::jsonb AND (duplicate_of IS NOT NULL OR same_as_row IS NOT NULL))::int AS duplicates
     FROM lead_import_rows WHERE import_id = $1`,
    [lead.id],
  );
  const before = await sql.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM lead_import_keys WHERE tenant_id = $1 AND file_sha256 = $2`,
    [lead.tenantId, lead.sha256],
  );
  const c = counts.rows[0]!;
  return {
    rows: c.rows,
    ready: c.ready,
    withProblems: c.problems,
    duplicates: c.duplicates,
    importedBefore: before.rows[0]!.n,
  };
}

export type RowFilter = 'all' | 'problems' | 'duplicates';

export interface PreviewRow {
  rowNo: number;
  line: number;
  cells: string[];
  body: Record<string, unknown> | null;
  problems: Record<string, string> | null;
  duplicateOf: string | null;
  sameAsRow: number | null;
  importedAs: string | null;
}

/** A page of an upload's rows after `after` (by row number), filtered, with the lead an earlier import made of each. */
export async function previewRows(
  sql: Queryable,
  lead: LeadImport,
  o: { filter: RowFilter; after: number; limit: number },
): Promise<PreviewRow[]> {
  const where =
    o.filter === 'problems'
      ? `AND r.problems <> '{}'::jsonb`
      : o.filter === 'duplicates'
        ? `AND r.problems = '{}'::jsonb AND (r.duplicate_of IS NOT NULL OR r.same_as_row IS NOT NULL)`
        : '';
  const rows = await sql.query<{
    row_no: number;
    line: number;
    cells: string[];
    body: Record<string, unknown> | null;
    problems: Record<string, string> | null;
    duplicate_of: string | null;
    same_as_row: number | null;
    imported_as: string | null;
  }>(
    `SELECT r.row_no, r.line, r.cells, r.body, r.problems, r.duplicate_of, r.same_as_row, k.lead_id AS imported_as
     FROM lead_import_rows r
     LEFT JOIN lead_import_keys k ON k.tenant_id = $2 AND k.file_sha256 = $3 AND k.row_no = r.row_no
     WHERE r.import_id = $1 AND r.row_no > $4 ${where}
     ORDER BY r.row_no LIMIT $5`,
    [lead.id, lead.tenantId, lead.sha256, o.after, o.limit],
  );
  return rows.rows.map((r) => ({
    rowNo: r.row_no,
    line: r.line,
    cells: r.cells,
    body: r.body,
    problems: r.problems,
    duplicateOf: r.duplicate_of,
    sameAsRow: r.same_as_row,
    importedAs: r.imported_as,
  }));
}

/** The rows of an upload that passed every check, by number: the items of its import job. */
export async function readyRows(sql: Queryable, lead: LeadImport): Promise<number[]> {
  const rows = await sql.query<{ row_no: number }>(
    `SELECT r.row_no FROM lead_import_rows r JOIN lead_imports i ON i.id = r.import_id
     WHERE r.import_id = $1 AND i.tenant_id = $2 AND r.problems = '{}'::jsonb ORDER BY r.row_no`,
    [lead.id, lead.tenantId],
  );
  return rows.rows.map((r) => r.row_no);
}

/**
 * Marks an upload as being imported, once: false when it was started already (a second press of the button). One
 * started more than a minute ago that never got its job (the process stopped in between) may be started again.
 */
export async function markStarted(sql: Queryable, lead: LeadImport, now: Date): Promise<boolean> {
  const marked = await sql.query(
    `UPDATE lead_imports SET started_at = $3
     WHERE id = $1 AND tenant_id = $2 AND checked_at IS NOT NULL
       AND (started_at IS NULL OR (job_id IS NULL AND started_at < $3::timestamptz - interval '1 minute'))`,
    [lead.id, lead.tenantId, now],
  );
  return marked.rowCount === 1;
}

export async function setImportJob(sql: Queryable, lead: LeadImport, jobId: string): Promise<void> {
  await sql.query('UPDATE lead_imports SET job_id = $3 WHERE id = $1 AND tenant_id = $2', [
    lead.id,
    lead.tenantId,
    jobId,
  ]);
}

/** The LeadCreate body a row of an upload was checked as, or none (the upload is gone, or another workspace's). */
export async function rowBody(
  sql: Queryable,
  tenantId: string,
  importId: string,
  rowNo: number,
): Promise<Record<string, unknown> | undefined> {
  const found = await sql.query<{ body: Record<string, unknown> | null }>(
    `SELECT r.body FROM lead_import_rows r JOIN lead_imports i ON i.id = r.import_id
     WHERE r.import_id = $1 AND r.row_no = $2 AND i.tenant_id = $3`,
    [importId, rowNo, tenantId],
  );
  return found.rows[0]?.body ?? undefined;
}

/** `rowBody` of several rows in one statement, by row number (a row whose upload is gone is missing). */
export async function rowBodies(
  sql: Queryable,
  tenantId: string,
  importId: string,
  rowNos: readonly number[],
): Promise<Map<number, Record<string, unknown>>> {
  const found = await sql.query<{ row_no: number; body: Record<string, unknown> | null }>(
    `SELECT r.row_no, r.body FROM lead_import_rows r JOIN lead_imports i ON i.id = r.import_id
     WHERE r.import_id = $1 AND r.row_no = ANY($2::int[]) AND i.tenant_id = $3`,
    [importId, rowNos, tenantId],
  );
  return new Map(found.rows.flatMap((r) => (r.body ? [[r.row_no, r.body] as const] : [])));
}

/** The lead a row of a file (by its SHA-256) made in an earlier import of the workspace, if any. */
export async function importedRow(
  sql: Queryable,
  tenantId: string,
  sha256: string,
  rowNo: number,
): Promise<{ leadId: string; duplicate: boolean } | undefined> {
  const found = await sql.query<{ lead_id: string; duplicate: boolean }>(
    'SELECT lead_id, duplicate FROM lead_import_keys WHERE tenant_id = $1 AND file_sha256 = $2 AND row_no = $3',
    [tenantId, sha256, rowNo],
  );
  const row = found.rows[0];
  return row ? { leadId: row.lead_id, duplicate: row.duplicate } : undefined;
}

/** Records the lead a row of a file made, in the capture's transaction (so a rerun finds it and makes none). */
export async function recordImportedRow(
  sql: Queryable,
  o: {
    tenantId: string;
    sha256: string;
    rowNo: number;
    leadId: string;
    duplicate: boolean;
    importId: string;
    now: Date;
  },
): Promise<void> {
  await sql.query(
    `INSERT INTO lead_import_keys (tenant_id, file_sha256, row_no, lead_id, duplicate, import_id, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7)`,
    [o.tenantId, o.sha256, o.rowNo, o.leadId, o.duplicate, o.importId, o.now],
  );
}

export interface RecentImport {
  id: string;
  filename: string;
  rowCount: number;
  createdAt: Date;
  started: boolean;
}

/** The workspace's latest uploads, newest first. */
export async function recentImports(sql: Queryable, tenantId: string, limit = 10): Promise<RecentImport[]> {
  const rows = await sql.query<{ id: string; filename: string; row_count: number; created_at: Date; started: boolean }>(
    `SELECT id, filename, row_count, created_at, started_at IS NOT NULL AS started FROM lead_imports
     WHERE tenant_id = $1 AND uploaded ORDER BY created_at DESC LIMIT $2`,
    [tenantId, limit],
  );
  return rows.rows.map((r) => ({
    id: r.id,
    filename: r.filename,
    rowCount: r.row_count,
    createdAt: r.created_at,
    started: r.started,
  }));
}
