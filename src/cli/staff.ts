import type { Command } from 'commander';
import type { AppServices } from '../bootstrap.js';
import { staffContext } from '../commands/run-command.js';
import type { Actor, CommandContext } from '../events/types.js';
import type { Workspace } from '../workspaces/workspace.js';
import { requireWorkspace, withServices } from './context.js';
import { CliError } from './output.js';

/** The options of every command that acts as a staff member (the workspace UI's operations). */
export interface StaffOptions {
  as: string;
  sandbox?: boolean;
}

/** The staff member acting, recorded as the events' actor: an active user of the workspace, as in the admin interface. */
export function staffActor(workspace: Workspace, email: string): Actor {
  const user = workspace.settings.users.find((u) => u.email === email.toLowerCase() && u.active);
  if (!user) throw new CliError(`--as must be the email of an active user of the workspace ${workspace.slug}`);
  return { type: 'user', user_id: user.id, email: user.email, name: user.name };
}

/** Runs an operation in the workspace as the staff member `--as` names, live or `--sandbox`. */
export async function withStaff<T>(
  idOrSlug: string,
  o: StaffOptions,
  work: (s: AppServices, ws: Workspace, context: CommandContext) => Promise<T>,
): Promise<T> {
  return withServices(async (s) => {
    const ws = await requireWorkspace(s, idOrSlug);
    const context = staffContext(ws.id, o.sandbox ?? false, staffActor(ws, o.as), s.now());
    return work(s, ws, context);
  });
}

/** Adds `--as <email>` (required) and `--sandbox` to a command. */
export function staffOptions(command: Command): Command {
  return command
    .requiredOption(
      '--as <email>',
      'the staff member acting (an active user of the workspace); recorded in the history',
    )
    .option('--sandbox', 'act on sandbox (test-mode) data');
}
