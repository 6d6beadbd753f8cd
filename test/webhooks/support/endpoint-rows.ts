import { randomUUID } from 'node:crypto';
import type pg from 'pg';

/**
 * An active endpoint row and its health row written directly, for tests of the claim's SQL that need many endpoints
 * and deliveries faster than commands make them (the sealed secret is a placeholder: nothing is sent).
 */
export async function insertEndpointRow(
  sql: pg.ClientBase | pg.Pool,
  tenantId: string,
  at: Date,
  eventType = 'document.uploaded',
): Promise<string> {
  const id = randomUUID();
  await sql.query(
    `INSERT INTO webhook_endpoints (id, tenant_id, sandbox, url, events, status, sealed_secret, created_at, updated_at, created_tx_id, created_position)
     VALUES ($1, $2, false, 'https://hooks.test/in', ARRAY[$4::text], 'active', 'sealed', $3, $3, '1', 1)`,
    [id, tenantId, at, eventType],
  );
  await sql.query('INSERT INTO webhook_endpoint_health (endpoint_id) VALUES ($1)', [id]);
  return id;
}

/** Empties the endpoint and delivery tables between a property's runs (one fresh state per generated case). */
export async function clearWebhookRows(sql: pg.ClientBase | pg.Pool): Promise<void> {
  await sql.query(
    'TRUNCATE webhook_delivery_attempts, webhook_deliveries, webhook_queues, webhook_leases, webhook_endpoint_health, webhook_endpoints',
  );
}

/** Leases deliveries of an endpoint to `owner` until `until` (lease rows), as a claim by another worker would. */
export async function leaseAsAnotherClaim(
  sql: pg.ClientBase | pg.Pool,
  endpointId: string,
  deliveryIds: readonly string[],
  owner: string,
  until: Date,
): Promise<void> {
  await sql.query(
    `INSERT INTO webhook_leases (delivery_id, lease_until, endpoint_id, owner)
     SELECT id, $4::bigint, $1, $3::text FROM unnest($2::uuid[]) AS id`,
    [endpointId, deliveryIds, owner, until.getTime()],
  );
}

/** A live lease, with its delivery's attempts and the lease's end (ms since the epoch). */
interface LeaseRow {
  id: string;
  endpoint_id: string;
  tenant_id: string;
  owner: string;
  attempts: number;
  lease_until: number;
}

/** The deliveries under a live lease at `at`, with their endpoint and tenant. */
export async function liveLeaseRows(sql: pg.ClientBase | pg.Pool, at: Date): Promise<LeaseRow[]> {
  const rows = await sql.query<LeaseRow>(
    `SELECT d.id, l.endpoint_id, d.tenant_id, l.owner, d.attempts, l.lease_until::float8 AS lease_until
       FROM webhook_leases l JOIN webhook_deliveries d ON d.id = l.delivery_id
      WHERE l.lease_until > $1::bigint AND d.status = 'pending'`,
    [at.getTime()],
  );
  return rows.rows;
}
