import { Command } from 'commander';
import { registerApplicationCommands } from './application-commands.js';
import { registerAuditCommands } from './audit-commands.js';
import { registerExportCommands } from './export-commands.js';
import { markRequiredOptions } from './help.js';
import { registerHistoryCommands } from './history-commands.js';
import { registerInvoiceCommands } from './invoice-commands.js';
import { registerDocumentCommands } from './document-commands.js';
import { registerKeyCommands } from './key-commands.js';
import { registerLeadCommands } from './lead-commands.js';
import { registerServiceCommands } from './service-commands.js';
import { registerTaskCommands } from './task-commands.js';
import { registerWebhookCommands } from './webhook-commands.js';
import { registerWorkspaceCommands } from './workspace-commands.js';

/** The `visa-crm` command and every subcommand, ready to parse a command line. */
export function buildProgram(): Command {
  const program = new Command('visa-crm')
    .description('visa-crm-api: run the service and do what the workspace UI does')
    .option('--json', 'print JSON, for scripts: one JSON document alone on stdout')
    .option('--debug', 'on failure, also print the stack trace (or set DEBUG)');
  // Before the commands are added: they inherit the help settings of their parent when created.
  markRequiredOptions(program);
  const json = () => Boolean(program.opts<{ json?: boolean }>().json);

  registerServiceCommands(program, json);
  registerWorkspaceCommands(program, json);
  registerKeyCommands(program, json);
  registerLeadCommands(program, json);
  registerApplicationCommands(program, json);
  registerHistoryCommands(program, json);
  registerWebhookCommands(program, json);
  registerAuditCommands(program, json);
  registerExportCommands(program, json);
  registerTaskCommands(program, json);
  registerInvoiceCommands(program, json);
  registerDocumentCommands(program, json);
  return program;
}
