import { applicationStatus, type ApplicationState } from '../../domain/applications/index.js';
import type { AdminApplication } from '../../schemas/application.js';

/** A case as the admin interface and the CLI show it: the ApplicationStatus plus stages and every module. */
export function applicationView(state: ApplicationState, sandbox: boolean): AdminApplication {
  return {
    ...applicationStatus(state),
    lead_id: state.lead_id,
    sandbox,
    opened_at: state.opened_at,
    stages: state.stages.map(({ id, key, name, position }) => ({ id, key, name, position })),
    roadmap: state.modules.map((m) => ({
      key: m.key,
      name: m.name,
      state: m.state,
      selected: m.selected,
      optional: m.optional,
      custom: m.custom,
      counts_toward_progress: m.counts_toward_progress,
      stages: m.stages,
      details: m.details,
    })),
  };
}
