import { idOfStream } from '../domain/streams.js';
import {
  APPLICATION_EVENT_TYPES,
  toApplicationEvent,
  applicationStatus,
  evolve,
  type ApplicationState,
  type ApplicationStatus,
} from '../domain/applications/index.js';
import type { RecordedEvent } from '../events/types.js';
import type { Queryable, Writer } from '../storage/postgres.js';
import type { Projection } from './projection.js';

/** The `applications` read model: each case's folded state and its ApplicationStatus, per tenant and mode. */
export const applicationsProjection: Projection = {
  name: 'applications',
  tables: ['applications'],
  eventTypes: APPLICATION_EVENT_TYPES,
  async apply(sql: Writer, stored: RecordedEvent): Promise<void> {
    const event = toApplicationEvent(stored);
    if (event.type === 'application.opened') {
      const state = evolve(undefined, event);
      sql.send(
        `INSERT INTO applications (id, tenant_id, sandbox, lead_id, number, case_ref, state, status, revision, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $10)`,
        [
          state.id,
          stored.tenantId,
          stored.sandbox,
          state.lead_id,
          state.number,
          state.case_ref,
          JSON.stringify(state),
          JSON.stringify(applicationStatus(state)),
          stored.revision,
          stored.createdAt,
        ],
      );
      return;
    }
    const id = idOfStream('application', stored.streamId);
    const row = (
      await sql.query<{ state: ApplicationState }>(
        'SELECT state FROM applications WHERE id = $1 AND tenant_id = $2 FOR UPDATE',
        [id, stored.tenantId],
      )
    ).rows[0];
    if (!row) throw new Error(`No read-model row for ${stored.streamId}`);
    const state = evolve(row.state, event);
    sql.send(
      'UPDATE applications SET state = $2, status = $3, revision = $4, updated_at = $5 WHERE id = $1 AND tenant_id = $6',
      [
        id,
        JSON.stringify(state),
        JSON.stringify(applicationStatus(state)),
        stored.revision,
        stored.createdAt,
        stored.tenantId,
      ],
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
