import type { AppServices } from '../bootstrap.js';
import { createKey, listKeys, revokeKey, type ApiKeyRecord } from '../keys/repository.js';
import { SCOPES } from '../shared/enums.js';

/** The names `visa-crm demo` gives its keys: how it finds the ones an earlier start made. */
const DEMO_KEY_NAMES = ['demo secret live', 'demo public live', 'demo secret test', 'demo public test'];

export interface DemoKeys {
  keys: Record<'secret_live' | 'public_live' | 'secret_test' | 'public_test', string>;
  /** The demo keys of earlier starts, revoked now so demo starts do not pile up working keys. */
  revoked: Array<Pick<ApiKeyRecord, 'id' | 'name' | 'last4'>>;
}

/** Revokes the demo workspace's earlier demo keys (only those, by their names) and makes four new ones. */
export async function renewDemoKeys(services: AppServices, workspaceId: string, origins: string[]): Promise<DemoKeys> {
  const revoked: DemoKeys['revoked'] = [];
  for (const key of await listKeys(services.pool, workspaceId)) {
    if (key.revoked_at || !DEMO_KEY_NAMES.includes(key.name)) continue;
    await revokeKey(services.pool, workspaceId, key.id);
    revoked.push({ id: key.id, name: key.name, last4: key.last4 });
  }
  const make = async (kind: 'secret' | 'public', mode: 'live' | 'test') =>
    (
      await createKey(services.pool, {
        tenantId: workspaceId,
        name: `demo ${kind} ${mode}`,
        kind,
        mode,
        ...(kind === 'secret'
          ? { scopes: [...SCOPES] }
          : { scopes: ['leads:create'], allowedOrigins: origins, sourceKey: 'web_form' }),
      })
    ).value;
  return {
    keys: {
      secret_live: await make('secret', 'live'),
      public_live: await make('public', 'live'),
      secret_test: await make('secret', 'test'),
      public_test: await make('public', 'test'),
    },
    revoked,
  };
}

export function revokedText(revoked: DemoKeys['revoked']): string {
  if (revoked.length === 0) return 'No demo keys of an earlier start were active.';
  return `Revoked the ${revoked.length} demo key(s) of earlier starts: ${revoked.map((k) => `${k.name} …${k.last4} (${k.id})`).join(', ')}.`;
}
