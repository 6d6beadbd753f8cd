import type { ApplicationEvent, ApplicationState } from './types.js';
import type { WithoutPayload } from '../facts.js';

/** An event's facts: what the state is built from. Every ApplicationEvent is one (its payload is ignored). */
export type ApplicationFact = WithoutPayload<ApplicationEvent>;

/** Folds one event into the case. Payloads are ignored: the facts beside them are what the state is built from. */
export function evolve(state: ApplicationState | undefined, event: ApplicationFact): ApplicationState {
  if (event.type === 'application.opened') {
    const d = event.data;
    return {
      id: d.application_id,
      lead_id: d.lead_id,
      case_ref: d.case_ref,
      number: d.number,
      stages: d.stages,
      modules: d.modules,
      // The initial stage_changed event that always follows sets the stage; until then the first stage holds it.
      stage_id: d.stages[0]!.id,
      status: 'active',
      outcome: null,
      opened_at: d.opened_at,
    };
  }
  if (!state) throw new Error(`${event.type} before application.opened`);
  switch (event.type) {
    case 'application.stage_changed':
      return { ...state, stage_id: event.data.to_stage_id };
    case 'application.module_updated': {
      const others = state.modules.filter((m) => m.key !== event.data.module_key);
      others.splice(event.data.index, 0, event.data.module);
      return { ...state, modules: others };
    }
    case 'application.module_details_saved':
      return {
        ...state,
        modules: state.modules.map((m) =>
          m.key === event.data.module_key ? { ...m, name: event.data.name, details: event.data.details } : m,
        ),
      };
    case 'application.status_changed':
      return { ...state, status: event.data.to };
    case 'application.outcome':
      return { ...state, outcome: event.data.outcome };
    case 'application.note_added':
      return state;
  }
}

export function fold(events: readonly ApplicationFact[]): ApplicationState | undefined {
  return events.reduce<ApplicationState | undefined>((state, event) => evolve(state, event), undefined);
}
