import { Command } from 'commander';
import { registerAccountVerbs } from './verbs/accounts.js';
import { registerApplicationVerbs } from './verbs/applications.js';
import { registerAuditVerbs } from './verbs/audit.js';
import { registerExportVerbs } from './verbs/export.js';
import { markRequiredOptions } from './help.js';
import { registerHistoryVerbs } from './verbs/history.js';
import { registerInvoiceVerbs } from './verbs/invoices.js';
import { registerDocumentVerbs } from './verbs/documents.js';
import { registerDoctorVerbs } from './verbs/doctor.js';
import { registerKeyVerbs } from './verbs/keys.js';
import { registerLeadVerbs } from './verbs/leads.js';
import { registerListenVerbs } from './verbs/listen.js';
import { registerServiceVerbs } from './verbs/service.js';
import { registerTaskVerbs } from './verbs/tasks.js';
import { registerWebhookVerbs } from './verbs/webhooks.js';
import { registerWorkspaceVerbs } from './verbs/workspaces.js';

/** The `visa-crm` command and every subcommand, ready to parse a command line. */
export function buildProgram(): Command {
  const program = new Command('visa-crm')
    .description('visa-crm-api: run the service and do what the workspace UI does')
    .option('--json', 'print JSON, for scripts: one JSON document alone on stdout')
    .option('--debug', 'on failure, also print the stack trace (or set DEBUG)');
  // Before the commands are added: they inherit the help settings of their parent when created, and the exit override.
  markRequiredOptions(program);
  // Commander's own exits (--help, an unknown option or command, a missing argument) throw instead of calling
  // process.exit(), so they leave through main.ts's one exit path (nodejs/node#54918, see there).
  program.exitOverride();
  const json = () => Boolean(program.opts<{ json?: boolean }>().json);

  registerServiceVerbs(program, json);
  registerWorkspaceVerbs(program, json);
  registerKeyVerbs(program, json);
  registerLeadVerbs(program, json);
  registerApplicationVerbs(program, json);
  registerHistoryVerbs(program, json);
  registerWebhookVerbs(program, json);
  registerAuditVerbs(program, json);
  registerExportVerbs(program, json);
  registerTaskVerbs(program, json);
  registerInvoiceVerbs(program, json);
  registerDocumentVerbs(program, json);
  registerListenVerbs(program);
  registerAccountVerbs(program, json);
  registerDoctorVerbs(program, json);
  return program;
}
