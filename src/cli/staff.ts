import type { Command } from 'commander';
import type { AppServices } from '../bootstrap.js';
import { staffContext } from '../commands/run-command.js';
import type { Actor, CommandContext } from '../events/types.js';
import { activeMember } from '../identity/members.js';
import { can, operationOfCliCommand, PERMISSIONS, type Operation } from '../identity/permissions.js';
import type { Workspace } from '../workspaces/workspace.js';
import { requireWorkspace, withServices } from './context.js';
import { CliError } from './output.js';

/** The options of every command that acts as a staff member (the workspace UI's operations). */
export interface StaffOptions {
  as: string;
  sandbox?: boolean;
  /** The permission table's operation of the command, set before its action runs (staffOptions). */
  operation?: Operation;
}

/**
 * The staff member acting, recorded as the events' actor: an active member of the workspace whose role the permission
 * table lets do the operation. The CLI holds the database's credentials, so this is the operator's tool and not a
 * security boundary; it still keeps to the same table as the console and the admin interface.
 */
export function staffActor(workspace: Workspace, email: string, operation: Operation): Actor {
  const user = activeMember(workspace, email);
  if (!user) throw new CliError(`--as must be the email of an active user of the workspace ${workspace.slug}`);
  if (!can(user.role, operation))
    throw new CliError(
      `${user.email} is ${user.role === 'admin' ? 'an' : 'a'} ${user.role} of ${workspace.slug}, and the permission ` +
        `table does not let a ${user.role} do this: ${PERMISSIONS[operation].description.toLowerCase()} (${operation})`,
    );
  return { type: 'user', user_id: user.id, email: user.email, name: user.name };
}

/** Runs an operation in the workspace as the staff member `--as` names, live or `--sandbox`. */
export async function withStaff<T>(
  idOrSlug: string,
  o: StaffOptions,
  work: (s: AppServices, ws: Workspace, context: CommandContext) => Promise<T>,
): Promise<T> {
  const operation = o.operation;
  if (!operation) throw new Error('withStaff needs a command made with staffOptions');
  return withServices(async (s) => {
    const ws = await requireWorkspace(s, idOrSlug);
    const context = staffContext(ws.id, o.sandbox ?? false, staffActor(ws, o.as, operation), s.now());
    return work(s, ws, context);
  });
}

/** The permission table's operation of a command (`group name`); a command the table does not name cannot be built. */
export function cliOperation(command: Command): Operation {
  const path = `${command.parent?.name() ?? ''} ${command.name()}`.trim();
  const operation = operationOfCliCommand(path);
  if (!operation) throw new Error(`the permission table names no operation for the command ${path}`);
  return operation;
}

/** Adds `--as <email>` (required) and `--sandbox` to a command, and its operation in the permission table. */
export function staffOptions(command: Command): Command {
  const operation = cliOperation(command);
  return command
    .requiredOption(
      '--as <email>',
      'the staff member acting (an active user of the workspace whose role allows this); recorded in the history',
    )
    .option('--sandbox', 'act on sandbox (test-mode) data')
    .hook('preAction', (self) => {
      self.setOptionValue('operation', operation);
    });
}
