import type { Command } from 'commander';
import { eraseLead } from '../../commands/leads/erase-lead.js';
import { staffContext } from '../../commands/run-command.js';
import { listKeys } from '../../keys/repository.js';
import type { LeadErasure } from '../../schemas/lead.js';
import { staffActor } from '../staff.js';
import { sandboxSubmissions } from '../../projections/leads-queries.js';
import { requireWorkspace, withServices } from '../context.js';
import { requireId } from '../ids.js';
import { CliError, output, table } from '../output.js';

export function registerLeadVerbs(program: Command, json: () => boolean): void {
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
        return sandboxSubmissions(s.pool, s.personalData, ws.id, key.id, limit);
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

  program
    .command('lead')
    .description('staff operations on a lead')
    .command('erase <workspace> <leadId>')
    .description(
      "erase a lead's person on request: deletes the data keys of the lead and its applications (crypto-shredding) and scrubs the read models, idempotency answers and webhook delivery log; the lead stays listed, erased",
    )
    .requiredOption(
      '--as <email>',
      'the staff member acting (an active user of the workspace); recorded in the history',
    )
    .option('--sandbox', 'erase a sandbox (test-mode) lead')
    .action(async (idOrSlug: string, leadId: string, o: { as: string; sandbox?: boolean }) => {
      requireId(leadId, 'lead');
      const result = await withServices(async (s) => {
        const ws = await requireWorkspace(s, idOrSlug);
        const actor = staffActor(ws, o.as, 'leads.erase');
        const sandbox = o.sandbox ?? false;
        return eraseLead(s, {
          tenantId: ws.id,
          sandbox,
          leadId,
          context: (now) => staffContext(ws.id, sandbox, actor, now),
        });
      });
      output(json(), result, () => describeErasure(result));
    });
}

function describeErasure(e: LeadErasure): string {
  const when = e.erased_now ? `erased at ${e.erased_at}` : `already erased at ${e.erased_at}; nothing done`;
  const legacy =
    e.plaintext_events > 0
      ? `\n${e.plaintext_events} event(s) written before encryption keep their personal values in the log`
      : '';
  return `lead ${e.lead_id} ${when} (${e.streams} data key(s) deleted)${legacy}`;
}
