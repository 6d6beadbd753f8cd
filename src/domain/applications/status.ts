import type { ApplicationState, ApplicationStatus, CaseModule, CaseStage, ModuleRef } from './types.js';

const ref = (m: CaseModule): ModuleRef => ({ key: m.key, name: m.name });

export function selectedModules(state: Pick<ApplicationState, 'modules'>): CaseModule[] {
  return state.modules.filter((m) => m.selected);
}

/** Selected modules covering a stage, in case order. */
export function coveringModules(state: Pick<ApplicationState, 'modules'>, stageKey: string): CaseModule[] {
  return state.modules.filter((m) => m.selected && m.stages.includes(stageKey));
}

/**
 * The module holding the case at a stage: the first selected roadmap module covering it that is neither optional
 * nor custom (the roadmap's own step for that stage), else the first selected module covering it, else null.
 */
export function stageModule(state: Pick<ApplicationState, 'modules'>, stageKey: string | null): ModuleRef | null {
  if (stageKey === null) return null;
  const covering = coveringModules(state, stageKey);
  const primary = covering.find((m) => !m.optional && !m.custom) ?? covering[0];
  return primary ? ref(primary) : null;
}

/** Updated over selected modules that count toward progress. */
export function moduleProgress(state: Pick<ApplicationState, 'modules'>): { updated: number; total: number } {
  const counted = selectedModules(state).filter((m) => m.counts_toward_progress);
  return { updated: counted.filter((m) => m.state === 'updated').length, total: counted.length };
}

/** The percent, rounded down so 100 means everything counted is updated; 0 when nothing counts. */
export function progressPercent(counts: { updated: number; total: number }): number {
  return counts.total === 0 ? 0 : Math.floor((counts.updated * 100) / counts.total);
}

export function currentModule(state: Pick<ApplicationState, 'modules'>): ModuleRef | null {
  const first = state.modules.find((m) => m.selected && m.state === 'pending' && m.counts_toward_progress);
  return first ? ref(first) : null;
}

export function currentStage(state: Pick<ApplicationState, 'stages' | 'stage_id'>): CaseStage {
  const stage = state.stages.find((s) => s.id === state.stage_id);
  if (!stage) throw new Error(`The case is at an unknown stage ${state.stage_id}`);
  return stage;
}

/** The public ApplicationStatus of a case. */
export function applicationStatus(state: ApplicationState): ApplicationStatus {
  const stage = currentStage(state);
  const counts = moduleProgress(state);
  return {
    id: state.id,
    reference: state.case_ref,
    case_ref: state.case_ref,
    stage: { key: stage.key, name: stage.name, position: stage.position },
    progress: progressPercent(counts),
    status: state.status,
    outcome: state.outcome,
    module: stageModule(state, stage.key),
    modules: selectedModules(state).map((m) => ({ key: m.key, name: m.name, state: m.state })),
    current_module: currentModule(state),
    module_progress: counts,
  };
}
