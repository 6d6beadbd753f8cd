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
  await sql.query('TRUNCATE webhook_delivery_attempts, webhook_deliveries, webhook_endpoint_health, webhook_endpoints');
}
