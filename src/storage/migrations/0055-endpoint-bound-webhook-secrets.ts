import type pg from 'pg';
import { loadConfig } from '../../config.js';
import { bindEndpointSecrets } from '../../projections/webhook-endpoints.js';
import { loadSecretBox } from '../../shared/secret-box.js';

export const name = 'webhook secrets sealed for their endpoint';

// Webhook secrets are now sealed with their endpoint's id in the additional data (`v3:`), so a sealed secret copied
// onto another endpoint opens for none (docs/decisions.md, "An import changes nothing outside its own workspace").
// The stored ones are re-sealed that way here; re-sealing needs SECRET_ENCRYPTION_KEY, read as the service reads it.
export const sql = '';

export async function run(client: pg.ClientBase): Promise<void> {
  const unbound = await client.query(
    `SELECT 1 FROM webhook_endpoints WHERE sealed_secret NOT LIKE 'v3:%' OR previous_sealed_secret NOT LIKE 'v3:%' LIMIT 1`,
  );
  if (unbound.rows.length === 0) return;
  const box = await loadSecretBox(loadConfig());
  await bindEndpointSecrets(client, box.webhookSecrets, null);
}
