import type { Command } from 'commander';
import { listKeys } from '../keys/repository.js';
import { sandboxSubmissions } from '../projections/leads-queries.js';
import { requireWorkspace, withServices } from './context.js';
import { requireId } from './ids.js';
import { CliError, output, table } from './output.js';

export function registerLeadCommands(program: Command, json: () => boolean): void {
  const sandbox = program
    .command('sandbox')
    .description("a test key's sandbox submissions (the workspace UI's key page)");

  sandbox
    .command('list <workspace>')
    .description(
      'list what a test key submitted: the sandbox leads it created and the enquiries it added to sandbox leads',
    )
    .requiredOption('--key <keyId>', 'the id of the test key (see: visa-crm key list)')
    .option('--limit <n>', 'how many, newest first', '100')
    .action(async (idOrSlug: string, o: { key: string; limit: string }) => {
      requireId(o.key, 'key');
      const limit = Number(o.limit);
      if (!Number.isInteger(limit) || limit < 1 || limit > 10_000)
        throw new CliError('--limit must be an integer from 1 to 10000');
      const rows = await withServices(async (s) => {
        const ws = await requireWorkspace(s, idOrSlug);
        const key = (await listKeys(s.pool, ws.id)).find((k) => k.id === o.key);
        if (!key) throw new CliError(`No key ${o.key} in workspace ${ws.slug}`);
        if (key.mode !== 'test')
          throw new CliError(`Key ${o.key} is a live key; only test keys have sandbox submissions`);
        return sandboxSubmissions(s.pool, ws.id, key.id, limit);
      });
      output(json(), rows, () =>
        table(rows as unknown as Record<string, unknown>[], [
          'received_at',
          'outcome',
          'lead_id',
          'full_name',
          'email',
          'phone',
        ]),
      );
    });
}
