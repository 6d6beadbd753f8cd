import { streamName } from '../../domain/streams.js';
import type { Command } from 'commander';
import { historyEntries, type HistoryEntry } from '../../commands/history/summary.js';
import { withServices } from '../context.js';
import { requireId } from '../ids.js';
import { CliError, output } from '../output.js';

export function historyText(title: string, entries: HistoryEntry[]): string {
  const first = entries[0]!;
  const head = `${title}  (workspace ${first.tenant_id}${first.sandbox ? ', sandbox' : ''}; ${entries.length} event(s))`;
  return [head, ...entries.map((e) => `${e.at}  #${e.revision}  ${e.type}  by ${e.actor_text}\n    ${e.summary}`)].join(
    '\n',
  );
}

/** `visa-crm history lead|application|task|invoice|document <id>`: every event of the stream, oldest first, with who did it and when. */
export function registerHistoryVerbs(program: Command, json: () => boolean): void {
  const history = program
    .command('history')
    .description(
      'print the full history of a lead, an application, a task, an invoice or a document: what happened, who did it, when',
    );
  for (const what of ['lead', 'application', 'task', 'invoice', 'document'] as const) {
    history
      .command(`${what} <id>`)
      .description(`every event of the ${what}, in order`)
      .action(async (id: string) => {
        requireId(id, what);
        const events = await withServices((s) => s.store.readStream(streamName(what, id)));
        if (events.length === 0) throw new CliError(`No ${what} ${id}`);
        const entries = historyEntries(events);
        output(json(), entries, () => historyText(`History of ${what} ${id}`, entries));
      });
  }
}
