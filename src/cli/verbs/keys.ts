import { Option, type Command } from 'commander';
import { createKey, KeyRefusal, listKeys, revokeKey } from '../../keys/repository.js';
import { SCOPES, type Scope } from '../../shared/enums.js';
import { requireWorkspace, withServices } from '../context.js';
import { requireId } from '../ids.js';
import { CliError, output, table } from '../output.js';

const list = (value: string, previous: string[] = []) => [
  ...previous,
  ...value
    .split(',')
    .map((v) => v.trim())
    .filter(Boolean),
];

const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2}))?$/i;

/**
 * The --expires value as an instant: an ISO 8601 date (midnight UTC) or date and time with its zone, and in the
 * future; a key that would be born expired is refused rather than created useless.
 */
export function expiryInstant(value: string, now: Date): Date {
  const instant = ISO_INSTANT.test(value.trim()) ? new Date(value.trim()) : new Date(Number.NaN);
  if (Number.isNaN(instant.getTime()))
    throw new CliError(
      `--expires "${value}" is not a date: use ISO 8601, a date (2027-01-31) or a date and time with its zone (2027-01-31T09:00:00Z).`,
    );
  if (instant.getTime() <= now.getTime())
    throw new CliError(`--expires ${instant.toISOString()} is not in the future: a key must expire after it is made.`);
  return instant;
}

export function registerKeyVerbs(program: Command, json: () => boolean): void {
  const key = program.command('key').description('create, list and revoke API keys');

  key
    .command('create <workspace>')
    .description('create an API key; its full value is printed once and never again')
    .addOption(new Option('--type <type>', 'secret or public').choices(['secret', 'public']).default('secret'))
    .addOption(new Option('--mode <mode>', 'live or test').choices(['live', 'test']).default('live'))
    .option('--name <name>', 'a label for the key', 'API key')
    .option('--scopes <scopes>', `comma-separated: ${SCOPES.join(', ')} (public keys: leads:create only)`, list)
    .option('--origins <origins>', 'allowed origins of a public key, comma-separated', list)
    .option('--ips <ips>', 'allowed caller IPs or CIDR ranges, comma-separated', list)
    .option('--source <key>', 'the lead source key recorded on leads this key creates')
    .option('--expires <date>', 'expiry instant, in the future (ISO 8601 with a time zone, e.g. 2027-01-31T00:00:00Z)')
    .action(
      async (
        idOrSlug: string,
        o: {
          type: 'secret' | 'public';
          mode: 'live' | 'test';
          name: string;
          scopes?: string[];
          origins?: string[];
          ips?: string[];
          source?: string;
          expires?: string;
        },
      ) => {
        const scopes = o.scopes ?? (o.type === 'public' ? ['leads:create'] : [...SCOPES]);
        const unknown = scopes.filter((s) => !(SCOPES as readonly string[]).includes(s));
        if (unknown.length > 0) throw new CliError(`Unknown scope(s): ${unknown.join(', ')}`);
        const expiresAt = o.expires === undefined ? null : expiryInstant(o.expires, new Date());
        const created = await withServices(async (s) => {
          const ws = await requireWorkspace(s, idOrSlug);
          if (o.source && !ws.settings.sources.some((src) => src.key === o.source))
            throw new CliError(`The workspace has no source with the key ${o.source}`);
          try {
            return await createKey(s.pool, {
              tenantId: ws.id,
              name: o.name,
              kind: o.type,
              mode: o.mode,
              scopes: scopes as Scope[],
              allowedOrigins: o.origins ?? [],
              ipAllowlist: o.ips ?? [],
              sourceKey: o.source ?? null,
              expiresAt,
            });
          } catch (error) {
            if (error instanceof KeyRefusal) throw new CliError(error.message);
            throw error;
          }
        });
        output(
          json(),
          { ...created.record, key: created.value },
          () =>
            `Created ${o.mode} ${o.type} key ${created.record.id}\n\n  ${created.value}\n\nStore it now: it is shown only this once.`,
        );
      },
    );

  key
    .command('list <workspace>')
    .description('list the keys of a workspace (only their last four characters)')
    .action(async (idOrSlug: string) => {
      const keys = await withServices(async (s) => listKeys(s.pool, (await requireWorkspace(s, idOrSlug)).id));
      output(json(), keys, () =>
        table(
          keys.map((k) => ({
            ...k,
            last4: `…${k.last4}`,
            last_used_at: k.last_used_at ?? 'never',
            state: k.revoked_at ? 'revoked' : k.expires_at && k.expires_at < new Date() ? 'expired' : 'active',
          })),
          [
            'id',
            'name',
            'kind',
            'mode',
            'last4',
            'scopes',
            'ip_allowlist',
            'allowed_origins',
            'state',
            'last_used_at',
            'expires_at',
          ],
        ),
      );
    });

  key
    .command('revoke <workspace> <keyId>')
    .description('revoke a key; it answers 401 invalid_api_key from then on')
    .action(async (idOrSlug: string, keyId: string) => {
      requireId(keyId, 'key');
      const revoked = await withServices(async (s) =>
        revokeKey(s.pool, (await requireWorkspace(s, idOrSlug)).id, keyId),
      );
      if (!revoked) throw new CliError(`No key ${keyId} in that workspace`);
      output(json(), revoked, () => `Revoked key ${revoked.id}`);
    });
}
