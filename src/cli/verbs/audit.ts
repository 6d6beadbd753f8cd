import type { Command } from 'commander';
import { anchorText, parseAnchor, verifyChains, type VerifyResult } from '../../events/verify-chain.js';
import { listWorkspaces } from '../../workspaces/repository.js';
import { requireWorkspace, withServices } from '../context.js';
import { CliError, output } from '../output.js';

function resultText(slug: string, r: VerifyResult): string {
  const summary = `${slug} (${r.tenantId}): ${r.events} event(s) in ${r.streams} stream(s)`;
  if (r.broken) {
    const b = r.broken;
    return `${summary}\n  BROKEN at event ${b.eventId}, stream ${b.streamId} revision ${b.revision}, position ${b.position.txId}/${b.position.position}: ${b.reason}: ${b.detail}`;
  }
  return `${summary}: every chain verifies\n  head ${anchorText(r.head, r.at)}`;
}

/** `visa-crm audit verify [<workspace>]`: recomputes the hash chains and reports the first broken link. */
export function registerAuditVerbs(program: Command, json: () => boolean): void {
  const audit = program.command('audit').description('check that the event log is the one that was written');
  audit
    .command('verify [workspace]')
    .description('recompute the hash chains of a workspace (every workspace when none is named)')
    .option('--anchor <head@position>', 'a head printed earlier (by verify or export): checks nothing up to it changed')
    .action(async (idOrSlug: string | undefined, options: { anchor?: string }) => {
      const anchor = options.anchor === undefined ? undefined : parseAnchor(options.anchor);
      if (anchor === null) throw new CliError('--anchor takes <head hex>@<txId>/<position>, as verify prints it');
      if (anchor && idOrSlug === undefined) throw new CliError('--anchor needs the workspace it was taken of');
      const results = await withServices(async (s) => {
        const workspaces = idOrSlug ? [await requireWorkspace(s, idOrSlug)] : await listWorkspaces(s.pool);
        const verified: { slug: string; result: VerifyResult }[] = [];
        for (const w of workspaces) verified.push({ slug: w.slug, result: await verifyChains(s.pool, w.id, anchor) });
        return verified;
      });
      output(
        json(),
        results.map(({ slug, result }) => ({ workspace: slug, ...result, anchor: anchorText(result.head, result.at) })),
        () => results.map(({ slug, result }) => resultText(slug, result)).join('\n'),
      );
      // Exit 3 once the report is out (an exit hook of the embedded server would reset process.exitCode).
      const broken = results.filter(({ result }) => result.broken).map(({ slug }) => slug);
      if (broken.length > 0) throw new CliError(`A chain is broken in ${broken.join(', ')}`, 3);
    });
}
