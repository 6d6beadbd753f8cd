import { evolve } from './evolve.js';
import { applicationStatus, coveringModules, currentStage, stageModule } from './status.js';
import {
  ApplicationRefusal,
  type ApplicationCommand,
  type ApplicationEvent,
  type ApplicationModuleUpdated,
  type ApplicationOpened,
  type ApplicationStageChanged,
  type ApplicationState,
  type CaseModule,
  type CaseStage,
  type ModuleEventKind,
  type StageMoveCause,
} from './types.js';

const KEY_PATTERN = /^[a-z][a-z0-9_]{0,59}$/;
const NAME_MAX = 120;

export interface WorkflowInput {
  stages: CaseStage[];
  modules: { key: string; name: string; stages: string[]; counts_toward_progress: boolean; optional: boolean }[];
}

export interface OpenInput {
  application_id: string;
  lead_id: string;
  number: number;
  workflow: WorkflowInput;
  now: Date;
}

export const caseRef = (number: number): string => `APP-${number}`;

function stageChanged(state: ApplicationState, to: CaseStage, cause: StageMoveCause): ApplicationStageChanged {
  const from = cause === 'conversion' ? null : currentStage(state);
  const ordered = [...state.stages].sort((a, b) => a.position - b.position);
  const direction = from === null ? 'initial' : to.position > from.position ? 'forward' : 'backward';
  const passed =
    direction === 'forward'
      ? ordered.filter((s) => s.position > from!.position && s.position <= to.position).map((s) => s.id)
      : direction === 'initial'
        ? [to.id]
        : [];
  const facts = { to_stage_id: to.id, cause };
  const after = evolve(state, { type: 'application.stage_changed', data: facts });
  return {
    type: 'application.stage_changed',
    data: {
      ...facts,
      payload: {
        ...applicationStatus(after),
        stage_change: {
          from_stage_id: from?.id ?? null,
          to_stage_id: to.id,
          direction,
          passed_stage_ids: passed,
          from_stage_key: from?.key ?? null,
          to_stage_key: to.key,
          from_module: from ? stageModule(state, from.key) : null,
          to_module: stageModule(after, to.key),
        },
      },
    },
  };
}

function moduleUpdated(
  state: ApplicationState,
  kind: ModuleEventKind,
  module: CaseModule,
  index: number,
): ApplicationModuleUpdated {
  const before = state.modules.find((m) => m.key === module.key);
  const facts = { module_key: module.key, kind, module, index };
  const after = evolve(state, { type: 'application.module_updated', data: facts });
  return {
    type: 'application.module_updated',
    data: {
      ...facts,
      payload: {
        ...applicationStatus(after),
        module_event: {
          key: module.key,
          name: module.name,
          kind,
          from_state: before?.state ?? null,
          to_state: module.state,
          selected: module.selected,
        },
      },
    },
  };
}

/** A workflow's stages in order; refuses (409 no_application_workflow) a workflow without stages. */
export function workflowStages(workflow: OpenInput['workflow']): OpenInput['workflow']['stages'] {
  const stages = [...workflow.stages].sort((a, b) => a.position - b.position);
  if (stages.length === 0)
    throw new ApplicationRefusal(
      'conflict',
      'no_application_workflow',
      'The workspace defines no application stages, so a lead cannot be converted yet',
    );
  return stages;
}

/** The events that open a case on conversion: the case with its workflow, then its entry into the first stage. */
export function decideOpen(input: OpenInput): ApplicationEvent[] {
  const stages = workflowStages(input.workflow);
  const opened: ApplicationOpened = {
    type: 'application.opened',
    data: {
      application_id: input.application_id,
      lead_id: input.lead_id,
      case_ref: caseRef(input.number),
      number: input.number,
      stages,
      modules: input.workflow.modules.map((m) => ({
        key: m.key,
        name: m.name,
        roadmap_name: m.name,
        stages: [...m.stages],
        counts_toward_progress: m.counts_toward_progress,
        optional: m.optional,
        custom: false,
        // Optional modules start switched off; staff switch them on for the cases that need them.
        selected: !m.optional,
        state: 'pending',
        details: {},
      })),
      opened_at: input.now.toISOString(),
    },
  };
  const state = evolve(undefined, opened);
  return [opened, stageChanged(state, stages[0]!, 'conversion')];
}

/**
 * When every selected module covering the current stage is updated, the case moves on to the first later stage that
 * still has a pending selected module (skipping completed or empty stages), or to the last stage when none has.
 */
export function automaticMove(state: ApplicationState): ApplicationStageChanged | null {
  const stage = currentStage(state);
  const covering = coveringModules(state, stage.key);
  if (covering.length === 0 || covering.some((m) => m.state === 'pending')) return null;
  const later = state.stages.filter((s) => s.position > stage.position).sort((a, b) => a.position - b.position);
  if (later.length === 0) return null;
  const target =
    later.find((s) => coveringModules(state, s.key).some((m) => m.state === 'pending')) ?? later[later.length - 1]!;
  return stageChanged(state, target, 'modules');
}

function findModule(state: ApplicationState, key: string): { module: CaseModule; index: number } {
  const index = state.modules.findIndex((m) => m.key === key);
  if (index < 0)
    throw new ApplicationRefusal('not_found', 'module_not_found', `The case has no module with the key ${key}`);
  return { module: state.modules[index]!, index };
}

function assertOpen(state: ApplicationState): void {
  if (state.status === 'closed')
    throw new ApplicationRefusal(
      'conflict',
      'application_closed',
      'The application is closed; set its status to active or on_hold first',
    );
}

function cleanName(name: string, field: string): string {
  const trimmed = name.trim();
  if (trimmed.length < 1 || trimmed.length > NAME_MAX)
    throw new ApplicationRefusal('invalid', 'validation_failed', `${field} must be 1 to ${NAME_MAX} characters`, {
      [field]: `must be 1 to ${NAME_MAX} characters`,
    });
  return trimmed;
}

function customKey(state: ApplicationState, name: string): string {
  const slug =
    name
      .toLowerCase()
      .normalize('NFKD')
      .replace(/[^a-z0-9]+/g, '_')
      .replace(/^_+|_+$/g, '')
      .slice(0, 40) || 'module';
  const base = `custom_${slug}`;
  let key = base;
  for (let n = 2; state.modules.some((m) => m.key === key); n++) key = `${base}_${n}`;
  return key;
}

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

type Command<T extends ApplicationCommand['type']> = Extract<ApplicationCommand, { type: T }>;

/** Decides the events of one staff operation on a case. An operation that changes nothing decides no events. */
export function decide(state: ApplicationState, command: ApplicationCommand): ApplicationEvent[] {
  switch (command.type) {
    case 'set_module_state':
      return setModuleState(state, command);
    case 'select_module':
      return selectModule(state, command);
    case 'deselect_module':
      return deselectModule(state, command);
    case 'restore_module':
      return restoreModule(state, command);
    case 'add_module':
      return addModule(state, command);
    case 'save_module_details':
      return saveModuleDetails(state, command);
    case 'move_to_stage':
      return moveToStage(state, command);
    case 'set_status':
      if (state.status === command.status) return [];
      return [{ type: 'application.status_changed', data: { from: state.status, to: command.status } }];
    case 'record_outcome':
      return recordOutcome(state, command);
    case 'add_note':
      return addNote(command);
    default: {
      const unknown: never = command;
      throw new Error(`Unknown application command ${JSON.stringify(unknown)}`);
    }
  }
}

/** A note is taken whatever the case's status: it changes nothing on the case, it only adds to its timeline. */
function addNote(command: Command<'add_note'>): ApplicationEvent[] {
  const note = command.note.trim();
  if (!note)
    throw new ApplicationRefusal('invalid', 'validation_failed', 'A note must not be blank', {
      note: 'must not be blank',
    });
  if (note.length > 5000)
    throw new ApplicationRefusal('invalid', 'validation_failed', 'A note is at most 5000 characters', {
      note: 'must be at most 5000 characters',
    });
  return [{ type: 'application.note_added', data: { at: command.at, note, author: command.author } }];
}

function setModuleState(state: ApplicationState, command: Command<'set_module_state'>): ApplicationEvent[] {
  assertOpen(state);
  const { module, index } = findModule(state, command.module_key);
  if (!module.selected)
    throw new ApplicationRefusal(
      'conflict',
      'module_not_selected',
      `The module ${module.key} is switched off on this case; select it first`,
    );
  if (module.state === command.state) return [];
  const event = moduleUpdated(state, 'state', { ...module, state: command.state }, index);
  const move = command.state === 'updated' ? automaticMove(evolve(state, event)) : null;
  return move ? [event, move] : [event];
}

function selectModule(state: ApplicationState, command: Command<'select_module'>): ApplicationEvent[] {
  assertOpen(state);
  const { module, index } = findModule(state, command.module_key);
  if (module.selected) return [];
  return [moduleUpdated(state, 'selected', { ...module, selected: true }, index)];
}

function deselectModule(state: ApplicationState, command: Command<'deselect_module'>): ApplicationEvent[] {
  assertOpen(state);
  const { module, index } = findModule(state, command.module_key);
  if (!module.selected) return [];
  const event = moduleUpdated(state, 'deselected', { ...module, selected: false }, index);
  const move = automaticMove(evolve(state, event));
  return move ? [event, move] : [event];
}

function restoreModule(state: ApplicationState, command: Command<'restore_module'>): ApplicationEvent[] {
  assertOpen(state);
  const { module, index } = findModule(state, command.module_key);
  const restored: CaseModule = {
    ...module,
    selected: true,
    state: 'pending',
    name: module.roadmap_name ?? module.name,
    details: {},
  };
  if (same(restored, module)) return [];
  return [moduleUpdated(state, 'restored', restored, index)];
}

function addModule(state: ApplicationState, command: Command<'add_module'>): ApplicationEvent[] {
  assertOpen(state);
  const name = cleanName(command.name, 'name');
  if (command.key !== undefined && !KEY_PATTERN.test(command.key))
    throw new ApplicationRefusal('invalid', 'validation_failed', 'key must match ^[a-z][a-z0-9_]{0,59}$', {
      key: 'must match ^[a-z][a-z0-9_]{0,59}$',
    });
  if (command.key !== undefined && state.modules.some((m) => m.key === command.key))
    throw new ApplicationRefusal(
      'conflict',
      'module_exists',
      `The case already has a module with the key ${command.key}`,
    );
  if (command.after !== undefined && command.before !== undefined)
    throw new ApplicationRefusal('invalid', 'validation_failed', 'Give after or before, not both', {
      before: 'cannot be given with after',
    });
  const stageKeys = knownStageKeys(state, command.stage_keys ?? []);
  const index = insertionIndex(state, command);
  const module: CaseModule = {
    key: command.key ?? customKey(state, name),
    name,
    roadmap_name: null,
    stages: [...new Set(stageKeys)],
    counts_toward_progress: command.counts_toward_progress ?? true,
    optional: false,
    custom: true,
    selected: true,
    state: 'pending',
    details: {},
  };
  return [moduleUpdated(state, 'added', module, index)];
}

/** The stage keys of a new module, each naming a stage of the case. */
function knownStageKeys(state: ApplicationState, stageKeys: string[]): string[] {
  const unknownStage = stageKeys.find((k) => !state.stages.some((s) => s.key === k));
  if (unknownStage !== undefined)
    throw new ApplicationRefusal('invalid', 'validation_failed', `No stage has the key ${unknownStage}`, {
      stage_keys: `no stage has the key ${unknownStage}`,
    });
  return stageKeys;
}

/** Where a new module goes: after or before the module named, else at the end. */
function insertionIndex(state: ApplicationState, command: Pick<Command<'add_module'>, 'after' | 'before'>): number {
  let index = state.modules.length;
  for (const [field, anchor] of [
    ['after', command.after],
    ['before', command.before],
  ] as const) {
    if (anchor === undefined) continue;
    const at = state.modules.findIndex((m) => m.key === anchor);
    if (at < 0)
      throw new ApplicationRefusal('invalid', 'validation_failed', `No module has the key ${anchor}`, {
        [field]: `no module has the key ${anchor}`,
      });
    index = field === 'after' ? at + 1 : at;
  }
  return index;
}

function saveModuleDetails(state: ApplicationState, command: Command<'save_module_details'>): ApplicationEvent[] {
  const { module } = findModule(state, command.module_key);
  const name = command.name === undefined ? module.name : cleanName(command.name, 'name');
  const details: Record<string, unknown> = { ...module.details };
  for (const [key, value] of Object.entries(command.details ?? {})) {
    if (value === null) delete details[key];
    else details[key] = value;
  }
  if (name === module.name && same(details, module.details)) return [];
  return [{ type: 'application.module_details_saved', data: { module_key: module.key, name, details } }];
}

function moveToStage(state: ApplicationState, command: Command<'move_to_stage'>): ApplicationEvent[] {
  assertOpen(state);
  const target = state.stages.find((s) => s.key === command.stage || s.id === command.stage);
  if (!target)
    throw new ApplicationRefusal('invalid', 'validation_failed', `No stage has the key or id ${command.stage}`, {
      stage: 'no such stage',
    });
  if (target.id === state.stage_id) return [];
  return [stageChanged(state, target, 'manual')];
}

function recordOutcome(state: ApplicationState, command: Command<'record_outcome'>): ApplicationEvent[] {
  if (state.outcome === command.outcome) return [];
  const facts = { outcome: command.outcome, previous_outcome: state.outcome };
  const after = evolve(state, { type: 'application.outcome', data: facts });
  return [{ type: 'application.outcome', data: { ...facts, payload: applicationStatus(after) } }];
}
