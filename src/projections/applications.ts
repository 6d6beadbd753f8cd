import { idOfStream } from '../domain/streams.js';
import {
  APPLICATION_EVENT_TYPES,
  toApplicationEvent,
  applicationStatus,
  evolve,
  type ApplicationState,
  type ApplicationStatus,
} from '../domain/applications/index.js';
import type { Queryable } from '../storage/postgres.js';
import { loadStates, newAndStored, noRow, type FoldedRow, type FoldProjection, type FoldWriter } from './fold.js';

const OPENED = 'application.opened';

/** The `applications` read model: each case's folded state and its ApplicationStatus, per tenant and mode. */
export const applicationsProjection: FoldProjection<ApplicationState> = {
  name: 'applications',
  tables: ['applications'],
  eventTypes: APPLICATION_EVENT_TYPES,
  rowOf: (event) => idOfStream('application', event.streamId),
  creates: (event) => event.type === OPENED,
  replaces: (event) => event.type === OPENED,
  load: (sql, rows) => loadStates<ApplicationState>(sql, 'applications', 'state', rows),
  evolve(state, event) {
    if (state === undefined && event.type !== OPENED) throw noRow(event);
    return evolve(state, toApplicationEvent(event));
  },
  write(sql: FoldWriter, rows: readonly FoldedRow<ApplicationState>[]): void {
    const { inserts, updates } = newAndStored(rows);
    if (inserts.length > 0)
      sql.send(
        `INSERT INTO applications (id, tenant_id, sandbox, lead_id, number, case_ref, state, status, revision, created_at, updated_at)
         SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::boolean[], $4::uuid[], $5::integer[], $6::text[], $7::jsonb[],
                              $8::jsonb[], $9::integer[], $10::timestamptz[], $11::timestamptz[])`,
        [
          inserts.map((r) => r.state.id),
          inserts.map((r) => r.tenantId),
          inserts.map((r) => r.sandbox),
          inserts.map((r) => r.state.lead_id),
          inserts.map((r) => r.state.number),
          inserts.map((r) => r.state.case_ref),
          inserts.map((r) => JSON.stringify(r.state)),
          inserts.map((r) => JSON.stringify(applicationStatus(r.state))),
          inserts.map((r) => r.revision),
          inserts.map((r) => r.firstAt),
          inserts.map((r) => r.lastAt),
        ],
        inserts,
      );
    if (updates.length > 0)
      sql.send(
        `UPDATE applications AS a SET state = v.state, status = v.status, revision = v.revision, updated_at = v.updated_at
           FROM unnest($1::uuid[], $2::uuid[], $3::jsonb[], $4::jsonb[], $5::integer[], $6::timestamptz[])
                AS v(id, tenant_id, state, status, revision, updated_at)
          WHERE a.id = v.id AND a.tenant_id = v.tenant_id`,
        [
          updates.map((r) => r.id),
          updates.map((r) => r.tenantId),
          updates.map((r) => JSON.stringify(r.state)),
          updates.map((r) => JSON.stringify(applicationStatus(r.state))),
          updates.map((r) => r.revision),
          updates.map((r) => r.lastAt),
        ],
        updates,
      );
  },
};

export interface ApplicationRow {
  id: string;
  lead_id: string;
  sandbox: boolean;
  state: ApplicationState;
  status: ApplicationStatus;
  created_at: Date;
  updated_at: Date;
}

/** One case of a tenant in one mode; undefined for another tenant's, the other mode's or an unknown id. */
export async function findApplication(
  sql: Queryable,
  tenantId: string,
  sandbox: boolean,
  id: string,
): Promise<ApplicationRow | undefined> {
  const result = await sql.query<ApplicationRow>(
    'SELECT id, lead_id, sandbox, state, status, created_at, updated_at FROM applications WHERE id = $1 AND tenant_id = $2 AND sandbox = $3',
    [id, tenantId, sandbox],
  );
  return result.rows[0];
}

export async function findApplicationStatus(
  sql: Queryable,
  tenantId: string,
  sandbox: boolean,
  id: string,
): Promise<ApplicationStatus | undefined> {
  return (await findApplication(sql, tenantId, sandbox, id))?.status;
}
