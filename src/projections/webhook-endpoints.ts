import { ENDPOINT_EVENTS, toEndpointEvent } from '../domain/webhooks/endpoint.js';
import type { RecordedEvent } from '../events/types.js';
import type { EventKind } from '../shared/enums.js';
import type { Queryable, Writer } from '../storage/postgres.js';
import { PurposeBox } from '../shared/secret-box.js';
import type { Projection } from './projection.js';
import { payloadVersionOf, type PayloadVersion } from '../webhooks/versions/index.js';

export interface EndpointRow {
  id: string;
  tenant_id: string;
  sandbox: boolean;
  url: string;
  description: string | null;
  events: EventKind[];
  status: 'active' | 'paused';
  paused_reason: string | null;
  paused_at: Date | null;
  sealed_secret: string;
  previous_sealed_secret: string | null;
  previous_secret_valid_until: Date | null;
  created_at: Date;
  updated_at: Date;
  consecutive_failures: number;
  /** The payload version its deliveries are rendered in (src/webhooks/versions). */
  payload_version: PayloadVersion;
  /** The most deliveries a second it accepts; null: no limit. */
  rate_limit_per_second: number | null;
}

/** The WebhookEndpoint shape of the spec (never a secret). */
export interface PublicEndpoint {
  id: string;
  url: string;
  description: string | null;
  events: EventKind[];
  payload_version: PayloadVersion;
  rate_limit_per_second: number | null;
  status: 'active' | 'paused';
  consecutive_failures: number;
  paused_reason: string | null;
  paused_at: string | null;
  previous_secret_valid_until: string | null;
  created_at: string;
  updated_at: string;
}

const iso = (d: Date | null) => (d ? d.toISOString() : null);

/** previous_secret_valid_until is shown while the previous secret still signs, and null once it no longer does. */
export function toPublicEndpoint(row: EndpointRow, now: Date): PublicEndpoint {
  const overlap =
    row.previous_secret_valid_until && row.previous_secret_valid_until.getTime() > now.getTime()
      ? row.previous_secret_valid_until
      : null;
  return {
    id: row.id,
    url: row.url,
    description: row.description,
    events: row.events,
    payload_version: row.payload_version,
    rate_limit_per_second: row.rate_limit_per_second,
    status: row.status,
    consecutive_failures: row.consecutive_failures,
    paused_reason: row.paused_reason,
    paused_at: iso(row.paused_at),
    previous_secret_valid_until: iso(overlap),
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

const SELECT = `SELECT e.id, e.tenant_id, e.sandbox, e.url, e.description, e.events, e.status, e.paused_reason, e.paused_at, e.sealed_secret,
  e.previous_sealed_secret, e.previous_secret_valid_until, e.created_at, e.updated_at, e.payload_version, e.rate_limit_per_second, coalesce(h.consecutive_failures, 0) AS consecutive_failures
  FROM webhook_endpoints e LEFT JOIN webhook_endpoint_health h ON h.endpoint_id = e.id`;

export async function listEndpoints(sql: Queryable, tenantId: string, sandbox: boolean): Promise<EndpointRow[]> {
  return (
    await sql.query<EndpointRow>(`${SELECT} WHERE e.tenant_id = $1 AND e.sandbox = $2 ORDER BY e.created_at, e.id`, [
      tenantId,
      sandbox,
    ])
  ).rows;
}

/** Every endpoint of a workspace, live and test (for the workspace UI). */
export async function listAllEndpoints(sql: Queryable, tenantId: string): Promise<EndpointRow[]> {
  return (
    await sql.query<EndpointRow>(`${SELECT} WHERE e.tenant_id = $1 ORDER BY e.sandbox, e.created_at, e.id`, [tenantId])
  ).rows;
}

/** The endpoint with this id in the workspace; `sandbox` undefined matches either mode. */
export async function findEndpoint(
  sql: Queryable,
  tenantId: string,
  id: string,
  sandbox?: boolean,
): Promise<EndpointRow | undefined> {
  const result = await sql.query<EndpointRow>(
    `${SELECT} WHERE e.tenant_id = $1 AND e.id = $2 AND ($3::boolean IS NULL OR e.sandbox = $3)`,
    [tenantId, id, sandbox ?? null],
  );
  return result.rows[0];
}

export async function countEndpoints(sql: Queryable, tenantId: string, sandbox: boolean): Promise<number> {
  const result = await sql.query<{ count: number }>(
    'SELECT count(*)::int AS count FROM webhook_endpoints WHERE tenant_id = $1 AND sandbox = $2',
    [tenantId, sandbox],
  );
  return result.rows[0]!.count;
}

async function apply(sql: Writer, recorded: RecordedEvent): Promise<void> {
  const typed = toEndpointEvent(recorded);
  const id = typed.data.endpoint_id;
  switch (typed.type) {
    case ENDPOINT_EVENTS.created:
      sql.send(
        // The endpoint receives the events after its own creation in the global order, read from the log row itself
        // (a new stream's event has no position until its INSERT runs, just before this one).
        `INSERT INTO webhook_endpoints (id, tenant_id, sandbox, url, description, events, status, sealed_secret, created_at, updated_at, created_tx_id, created_position, payload_version, rate_limit_per_second)
         SELECT $1, $2, $3, $4, $5, $6, 'active', $7, $8, $8, e.tx_id, e.position, $10, $11 FROM events e WHERE e.id = $9 AND e.tenant_id = $2`,
        [
          id,
          recorded.tenantId,
          recorded.sandbox,
          typed.data.url,
          typed.data.description ?? null,
          typed.data.events,
          typed.data.sealed_secret,
          recorded.createdAt,
          recorded.id,
          payloadVersionOf(typed.data.payload_version),
          typed.data.rate_limit_per_second ?? null,
        ],
      );
      return;
    case ENDPOINT_EVENTS.changed:
      sql.send(
        'UPDATE webhook_endpoints SET url = $2, description = $3, events = $4, updated_at = $5 WHERE id = $1 AND tenant_id = $6',
        [id, typed.data.url, typed.data.description, typed.data.events, recorded.createdAt, recorded.tenantId],
      );
      return;
    case ENDPOINT_EVENTS.deleted:
      // What the endpoint was stays readable beside its delivery log, for the log's 30 days (migration 0131).
      sql.send(
        `WITH gone AS (DELETE FROM webhook_endpoints WHERE id = $1 AND tenant_id = $2
                       RETURNING id, tenant_id, sandbox, url, description, events, created_at)
         INSERT INTO webhook_endpoints_deleted (id, tenant_id, sandbox, url, description, events, created_at, deleted_at)
         SELECT id, tenant_id, sandbox, url, description, events, created_at, $3 FROM gone
         ON CONFLICT (id) DO NOTHING`,
        [id, recorded.tenantId, recorded.createdAt],
      );
      return;
    case ENDPOINT_EVENTS.paused:
      sql.send(
        `UPDATE webhook_endpoints SET status = 'paused', paused_reason = $2, paused_at = $3, updated_at = $3 WHERE id = $1 AND tenant_id = $4`,
        [id, typed.data.reason, recorded.createdAt, recorded.tenantId],
      );
      return;
    case ENDPOINT_EVENTS.resumed:
      sql.send(
        `UPDATE webhook_endpoints SET status = 'active', paused_reason = NULL, paused_at = NULL, updated_at = $2 WHERE id = $1 AND tenant_id = $3`,
        [id, recorded.createdAt, recorded.tenantId],
      );
      return;
    case ENDPOINT_EVENTS.secretRotated:
      sql.send(
        'UPDATE webhook_endpoints SET sealed_secret = $2, previous_sealed_secret = $3, previous_secret_valid_until = $4, updated_at = $5 WHERE id = $1 AND tenant_id = $6',
        [
          id,
          typed.data.sealed_secret,
          typed.data.previous_sealed_secret,
          typed.data.previous_secret_valid_until,
          recorded.createdAt,
          recorded.tenantId,
        ],
      );
      return;
    case ENDPOINT_EVENTS.versionChanged:
      sql.send('UPDATE webhook_endpoints SET payload_version = $2, updated_at = $3 WHERE id = $1 AND tenant_id = $4', [
        id,
        payloadVersionOf(typed.data.payload_version),
        recorded.createdAt,
        recorded.tenantId,
      ]);
      return;
    case ENDPOINT_EVENTS.rateLimitChanged:
      sql.send(
        'UPDATE webhook_endpoints SET rate_limit_per_second = $2, updated_at = $3 WHERE id = $1 AND tenant_id = $4',
        [id, typed.data.rate_limit_per_second, recorded.createdAt, recorded.tenantId],
      );
      return;
    case ENDPOINT_EVENTS.test:
      return; // delivered to the endpoint, nothing of the endpoint changes (not subscribed below)
    default: {
      const unknown: never = typed;
      throw new Error(`Unknown webhook endpoint event ${JSON.stringify(unknown)}`);
    }
  }
}

export const webhookEndpointsProjection: Projection = {
  name: 'webhook endpoints',
  tables: ['webhook_endpoints', 'webhook_endpoints_deleted'],
  eventTypes: [
    ENDPOINT_EVENTS.created,
    ENDPOINT_EVENTS.changed,
    ENDPOINT_EVENTS.deleted,
    ENDPOINT_EVENTS.paused,
    ENDPOINT_EVENTS.resumed,
    ENDPOINT_EVENTS.secretRotated,
    ENDPOINT_EVENTS.versionChanged,
    ENDPOINT_EVENTS.rateLimitChanged,
  ],
  apply,
};

/**
 * Re-seals the endpoint secrets sealed before binding (`v1:`, `v2:`) for their own endpoint (a workspace's, or every
 * endpoint when null); returns how many endpoints changed. The log keeps the values as written: a rebuild brings
 * unbound ones back, which still open (PurposeBox.openFor), and the next import or migration binds them again.
 */
export async function bindEndpointSecrets(sql: Queryable, box: PurposeBox, tenantId: string | null): Promise<number> {
  const unbound = await sql.query<{ id: string; sealed_secret: string; previous_sealed_secret: string | null }>(
    `SELECT id, sealed_secret, previous_sealed_secret FROM webhook_endpoints
      WHERE ($1::uuid IS NULL OR tenant_id = $1)
        AND (sealed_secret NOT LIKE 'v3:%' OR previous_sealed_secret NOT LIKE 'v3:%')
      FOR UPDATE`,
    [tenantId],
  );
  const bind = (id: string, sealed: string) =>
    PurposeBox.isBound(sealed) ? sealed : box.sealFor(id, box.openFor(id, sealed));
  const rows = unbound.rows.map((r) => ({
    id: r.id,
    sealed: bind(r.id, r.sealed_secret),
    previous: r.previous_sealed_secret === null ? null : bind(r.id, r.previous_sealed_secret),
  }));
  if (rows.length === 0) return 0;
  await sql.query(
    `UPDATE webhook_endpoints e SET sealed_secret = b.sealed, previous_sealed_secret = b.previous
       FROM unnest($1::uuid[], $2::text[], $3::text[]) AS b(id, sealed, previous) WHERE e.id = b.id`,
    [rows.map((r) => r.id), rows.map((r) => r.sealed), rows.map((r) => r.previous)],
  );
  return rows.length;
}
