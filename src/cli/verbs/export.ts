import fs from 'node:fs';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import zlib from 'node:zlib';
import type { Command } from 'commander';
import { boundedLines } from '../../commands/export/bounded-lines.js';
import { exportLines } from '../../commands/export/export-log.js';
import { importExport, type ExportFile } from '../../commands/export/import-log.js';
import { ImportRefusedError } from '../../commands/export/line-checker.js';
import { parsePositionToken } from '../../commands/export/position-token.js';
import { countWorkspaceEventsAfter } from '../../events/workspace-log.js';
import { START_OF_LOG } from '../../events/types.js';
import { projections } from '../../projections/index.js';
import type { ExportTrailer } from '../../schemas/export.js';
import { requireWorkspace, withServices } from '../context.js';
import { CliError, output } from '../output.js';
import { progressBar, progressLines } from '../progress.js';

interface ExportOptions {
  out?: string;
  gzip?: boolean;
  after?: string;
}

/** Passes lines on and keeps the last one, which is the trailer once the export has ended. */
async function* keepingLast(lines: AsyncIterable<string>, last: { line: string }): AsyncGenerator<string> {
  for await (const line of lines) {
    last.line = line;
    yield line;
  }
}

function trailerOf(chunk: string): ExportTrailer {
  const lines = chunk.trimEnd().split('\n');
  return JSON.parse(lines[lines.length - 1]!) as ExportTrailer;
}

/** `-` names standard input: an export piped in (`visa-crm export ws | visa-crm import -`). */
const STDIN = '-';

async function openExport(file: string): Promise<ExportFile> {
  if (file === STDIN) return { name: 'standard input', lines: boundedLines(process.stdin, 'standard input') };
  try {
    await fs.promises.access(file, fs.constants.R_OK);
  } catch {
    throw new CliError(`Cannot read ${file}`);
  }
  // Opened only when the import reaches it.
  return {
    name: file,
    lines: (async function* () {
      yield* boundedLines(fs.createReadStream(file), file);
    })(),
  };
}

/**
 * The exports to import: the files named, `-` for standard input (once at most), or standard input alone when no
 * file is named and it is not a terminal.
 */
export function importSources(names: readonly string[], stdinIsTerminal: boolean): string[] {
  if (names.filter((n) => n === STDIN).length > 1) throw new CliError('Standard input (-) can be read only once');
  if (names.length > 0) return [...names];
  if (stdinIsTerminal)
    throw new CliError('Name an export file, or pipe one in: visa-crm export <workspace> | visa-crm import -');
  return [STDIN];
}

async function runExport(idOrSlug: string, options: ExportOptions) {
  const after = options.after === undefined ? null : parsePositionToken(options.after);
  if (after === null && options.after !== undefined)
    throw new CliError('--after takes <txId>/<position>, the `next` of an earlier export');
  return withServices(async (s) => {
    const workspace = await requireWorkspace(s, idOrSlug);
    const total = process.stderr.isTTY
      ? await countWorkspaceEventsAfter(s.pool, workspace.id, after ?? START_OF_LOG)
      : 0;
    const progress = progressBar(`exporting ${workspace.slug}`, total);
    const last = { line: '' };
    const lines = keepingLast(
      exportLines(s.pool, workspace, after, s.now(), { onEvents: (n) => progress.add(n) }),
      last,
    );
    const sink: Writable = options.out ? fs.createWriteStream(options.out) : process.stdout;
    try {
      if (options.gzip) await pipeline(Readable.from(lines), zlib.createGzip(), sink);
      else await pipeline(Readable.from(lines), sink);
    } catch (error) {
      if (options.out) await fs.promises.rm(options.out, { force: true });
      throw error;
    } finally {
      progress.done();
    }
    return { workspace: workspace.slug, trailer: trailerOf(last.line) };
  });
}

/** `visa-crm export` and `visa-crm import`: a workspace's log as NDJSON, for auditors and as its backup and restore. */
export function registerExportVerbs(program: Command, json: () => boolean): void {
  program
    .command('export <workspace>')
    .description("write the workspace's whole event log as NDJSON (a header, one line per event, a trailer)")
    .option('--out <file>', 'write to this file instead of stdout')
    .option('--gzip', 'gzip the output')
    .option('--after <txId/position>', 'continue an earlier export: its trailer’s `next`')
    .action(async (idOrSlug: string, options: ExportOptions) => {
      const { workspace, trailer } = await runExport(idOrSlug, options);
      const summary = {
        workspace,
        events: trailer.events,
        next: trailer.next,
        head: trailer.head,
        anchor: trailer.anchor,
      };
      const text = () =>
        `exported ${trailer.events} event(s) of ${workspace}\n  next ${trailer.next}  (continue with --after ${trailer.next})\n  head ${trailer.anchor}`;
      // The export itself may be on stdout: the summary then goes to stderr.
      if (options.out) output(json(), summary, text);
      else process.stderr.write(`${json() ? JSON.stringify(summary) : text()}\n`);
    });

  program
    .command('import [files...]')
    .description(
      'replay an export (gzip or not; then the exports that continue it) into a database where the workspace has no events; `-` or no file reads standard input',
    )
    .action(async (names: string[]) => {
      const files: ExportFile[] = [];
      for (const name of importSources(names, process.stdin.isTTY === true)) files.push(await openExport(name));
      const progress = progressLines('import');
      const result = await withServices(async (s) => {
        try {
          return await importExport(s.pool, projections, files, s.personalData, {
            webhookSecrets: s.secretBox.webhookSecrets,
            onProgress: (events) => progress.report(events),
            namedStatements: s.namedStatements,
          });
        } catch (error) {
          if (error instanceof ImportRefusedError) throw new CliError(`Import refused: ${error.message}`);
          throw error;
        }
      });
      output(
        json(),
        result,
        () =>
          `imported ${result.events} event(s) of ${result.workspace.slug} (${result.workspace.id}); read models built\n  head ${result.anchor}`,
      );
    });
}
