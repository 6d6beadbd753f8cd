import type { Command } from 'commander';
import { handleApplicationCommand } from '../../commands/applications/application-commands.js';
import { applicationView } from '../../commands/applications/application-view.js';
import { convertLeadToApplication } from '../../commands/applications/convert-lead.js';
import {
  APPLICATION_STATUSES,
  MODULE_STATES,
  OUTCOMES,
  type ApplicationCommand,
} from '../../domain/applications/index.js';
import type { AdminApplication } from '../../schemas/application.js';
import { findApplication } from '../../projections/applications.js';
import { requireWorkspace, withServices } from '../context.js';
import { requireId } from '../ids.js';
import { CliError, notFoundIn, output, table } from '../output.js';
import { staffOptions, withStaff, type StaffOptions } from '../staff.js';

function describe(view: AdminApplication): string {
  const lines = [
    `${view.case_ref}  (${view.id})${view.sandbox ? '  [sandbox]' : ''}`,
    `lead ${view.lead_id}, opened ${view.opened_at}`,
    `stage ${view.stage.key} "${view.stage.name}" (position ${view.stage.position}); status ${view.status}; outcome ${view.outcome ?? '-'}`,
    `progress ${view.progress}% (${view.module_progress?.updated ?? 0}/${view.module_progress?.total ?? 0}); module ${view.module?.key ?? '-'}; current module ${view.current_module?.key ?? '-'}`,
    '',
    table(
      view.roadmap.map((m) => ({
        ...m,
        on: m.selected ? 'on' : 'off',
        kind: m.custom ? 'custom' : m.optional ? 'optional' : 'roadmap',
        counted: m.counts_toward_progress ? 'yes' : 'no',
      })),
      ['key', 'name', 'on', 'state', 'kind', 'counted', 'stages'],
    ),
  ];
  return lines.join('\n');
}

export function registerApplicationVerbs(program: Command, json: () => boolean): void {
  const application = program
    .command('application')
    .description('convert leads and work on applications (the workspace UI operations)');
  const print = (view: AdminApplication) => output(json(), view, () => describe(view));

  staffOptions(
    application
      .command('convert <workspace> <leadId>')
      .description('convert a lead into an application; the lead becomes converted and locked'),
  ).action(async (ws: string, leadId: string, o: StaffOptions) => {
    requireId(leadId, 'lead');
    print(
      await withStaff(ws, o, async (s, workspace, context) =>
        applicationView(await convertLeadToApplication(s, context, workspace, leadId), context.sandbox),
      ),
    );
  });

  application
    .command('show <workspace> <applicationId>')
    .option('--sandbox', 'read sandbox (test-mode) data')
    .description('show a case: status, stage, progress and every module')
    .action(async (ws: string, id: string, o: { sandbox?: boolean }) => {
      requireId(id, 'application');
      const view = await withServices(async (s) => {
        const workspace = await requireWorkspace(s, ws);
        const row = await findApplication(s.pool, workspace.id, o.sandbox ?? false, id);
        if (!row) throw notFoundIn('application', id, workspace, o.sandbox);
        return applicationView(row.state, row.sandbox);
      });
      print(view);
    });

  const operation = (
    name: string,
    args: string,
    description: string,
    build: (args: string[], options: Record<string, unknown>) => ApplicationCommand,
    extra?: (c: Command) => Command,
  ) => {
    let command = staffOptions(
      application.command(`${name} <workspace> <applicationId> ${args}`.trim()).description(description),
    );
    if (extra) command = extra(command);
    command.action(async (...received: unknown[]) => {
      // commander passes the positional arguments, then the options object, then the command.
      const positional = received.slice(0, -2) as string[];
      const options = received[received.length - 2] as StaffOptions & Record<string, unknown>;
      const [ws, id, ...rest] = positional;
      requireId(id!, 'application');
      const applicationCommand = build(rest, options);
      print(
        await withStaff(ws!, options, async (s, _workspace, context) =>
          applicationView(
            (await handleApplicationCommand(s.store, context, id!, () => applicationCommand)).state,
            context.sandbox,
          ),
        ),
      );
    });
  };

  const oneOf = <T extends string>(value: string, allowed: readonly T[], what: string): T => {
    if (!(allowed as readonly string[]).includes(value))
      throw new CliError(`${what} must be one of: ${allowed.join(', ')}`);
    return value as T;
  };

  operation('module-state', '<module> <state>', `mark a module ${MODULE_STATES.join(' or ')}`, ([module, state]) => ({
    type: 'set_module_state',
    module_key: module!,
    state: oneOf(state!, MODULE_STATES, 'state'),
  }));
  operation('module-select', '<module>', 'switch a module on', ([module]) => ({
    type: 'select_module',
    module_key: module!,
  }));
  operation('module-deselect', '<module>', 'switch a module off', ([module]) => ({
    type: 'deselect_module',
    module_key: module!,
  }));
  operation(
    'module-restore',
    '<module>',
    'restore a module as the roadmap defines it (on, pending, roadmap name, details cleared)',
    ([module]) => ({ type: 'restore_module', module_key: module! }),
  );
  operation(
    'module-add',
    '<name>',
    'add a custom module to the case',
    ([name], o) => ({
      type: 'add_module',
      name: name!,
      ...(o.key ? { key: String(o.key) } : {}),
      ...(o.after ? { after: String(o.after) } : {}),
      ...(o.before ? { before: String(o.before) } : {}),
      ...(o.stages
        ? {
            stage_keys: String(o.stages)
              .split(',')
              .map((k) => k.trim())
              .filter(Boolean),
          }
        : {}),
      ...(o.notCounted ? { counts_toward_progress: false } : {}),
    }),
    (c) =>
      c
        .option('--key <key>', 'the module key (default: custom_<name>)')
        .option('--after <module>', 'place it after this module')
        .option('--before <module>', 'place it before this module')
        .option('--stages <keys>', 'stage keys it covers, comma-separated')
        .option('--not-counted', 'does not count toward progress'),
  );
  operation(
    'module-save',
    '<module>',
    "save a module's name or details (not a module change: no webhook event)",
    ([module], o) => {
      const details: Record<string, unknown> = {};
      for (const pair of (o.set as string[] | undefined) ?? []) {
        const at = pair.indexOf('=');
        if (at < 1) throw new CliError(`--set ${pair}: use key=value`);
        details[pair.slice(0, at)] = pair.slice(at + 1);
      }
      for (const key of (o.unset as string[] | undefined) ?? []) details[key] = null;
      return { type: 'save_module_details', module_key: module!, ...(o.name ? { name: String(o.name) } : {}), details };
    },
    (c) =>
      c
        .option('--name <name>', 'the name shown on the case')
        .option('--set <key=value>', 'set a detail (repeatable)', (v: string, p: string[] = []) => [...p, v])
        .option('--unset <key>', 'remove a detail (repeatable)', (v: string, p: string[] = []) => [...p, v]),
  );
  operation(
    'move',
    '<stage>',
    'move the case to a stage (key or id), forward, backward or skipping stages',
    ([stage]) => ({ type: 'move_to_stage', stage: stage! }),
  );
  operation('status', '<status>', `set the status: ${APPLICATION_STATUSES.join(', ')}`, ([status]) => ({
    type: 'set_status',
    status: oneOf(status!, APPLICATION_STATUSES, 'status'),
  }));
  operation('outcome', '<outcome>', `record the outcome: ${OUTCOMES.join(', ')}`, ([outcome]) => ({
    type: 'record_outcome',
    outcome: oneOf(outcome!, OUTCOMES, 'outcome'),
  }));
}
