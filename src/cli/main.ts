#!/usr/bin/env node
import { Command } from 'commander';
import { isCommandError } from '../commands/errors.js';
import { commandErrorSentence } from './errors.js';
import { CliError } from './output.js';
import { registerApplicationCommands } from './application-commands.js';
import { registerHistoryCommands } from './history-commands.js';
import { registerKeyCommands } from './key-commands.js';
import { registerLeadCommands } from './lead-commands.js';
import { registerServiceCommands } from './service-commands.js';
import { registerInvoiceCommands } from './invoice-commands.js';
import { registerTaskCommands } from './task-commands.js';
import { registerWorkspaceCommands } from './workspace-commands.js';
import { registerWebhookCommands } from './webhook-commands.js';

const program = new Command('visa-crm')
  .description('visa-crm-api: run the service and do what the workspace UI does')
  .option('--json', 'print JSON, for scripts');
const json = () => Boolean(program.opts<{ json?: boolean }>().json);

registerServiceCommands(program, json);
registerWorkspaceCommands(program, json);
registerKeyCommands(program, json);
registerLeadCommands(program, json);
registerApplicationCommands(program, json);
registerHistoryCommands(program, json);
registerWebhookCommands(program, json);
registerTaskCommands(program, json);
registerInvoiceCommands(program, json);

program.parseAsync(process.argv).catch((error: unknown) => {
  if (error instanceof CliError || isCommandError(error)) {
    process.stderr.write(`${error instanceof CliError ? error.message : commandErrorSentence(error)}\n`);
    process.exit(2);
  }
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
