import type { Actor } from '../../events/types.js';
import { eventReader, eventTypes } from '../event-types.js';
import { Refusal } from '../refusal.js';
/** The application (case) aggregate: its state, the status shape the API shows, and the events of its stream. */

export const MODULE_STATES = ['pending', 'updated'] as const;
export const APPLICATION_STATUSES = ['active', 'on_hold', 'closed'] as const;
export const OUTCOMES = ['granted', 'refused', 'withdrawn'] as const;
export const MODULE_EVENT_KINDS = ['state', 'selected', 'deselected', 'restored', 'added', 'fields'] as const;
export const STAGE_DIRECTIONS = ['forward', 'backward', 'initial'] as const;

export type ModuleState = (typeof MODULE_STATES)[number];
export type ApplicationStatusValue = (typeof APPLICATION_STATUSES)[number];
export type Outcome = (typeof OUTCOMES)[number];
export type ModuleEventKind = (typeof MODULE_EVENT_KINDS)[number];
export type StageDirection = (typeof STAGE_DIRECTIONS)[number];

/** A workflow stage as the case saw it when it was opened. */
export interface CaseStage {
  id: string;
  key: string;
  name: string;
  position: number;
}

/** A module on a case: a roadmap module (switched on or off) or a custom one added to this case. */
export interface CaseModule {
  key: string;
  name: string;
  /** The roadmap's name for it; null for custom modules. */
  roadmap_name: string | null;
  /** Keys of the stages it covers. */
  stages: string[];
  counts_toward_progress: boolean;
  optional: boolean;
  custom: boolean;
  selected: boolean;
  state: ModuleState;
  details: Record<string, unknown>;
}

export interface ApplicationState {
  id: string;
  lead_id: string;
  case_ref: string;
  number: number;
  stages: CaseStage[];
  /** In roadmap order, custom modules where they were placed. */
  modules: CaseModule[];
  stage_id: string;
  status: ApplicationStatusValue;
  outcome: Outcome | null;
  opened_at: string;
}

export interface ModuleRef {
  key: string;
  name: string;
}

/** The spec's ApplicationStatus. */
export interface ApplicationStatus {
  id: string;
  reference: string;
  case_ref: string;
  stage: { key: string; name: string; position: number };
  progress: number;
  status: ApplicationStatusValue;
  outcome: Outcome | null;
  module: ModuleRef | null;
  modules: { key: string; name: string; state: ModuleState }[];
  current_module: ModuleRef | null;
  module_progress: { updated: number; total: number } | null;
}

export interface StageChange {
  from_stage_id: string | null;
  to_stage_id: string | null;
  direction: StageDirection | null;
  passed_stage_ids: string[];
  from_stage_key: string | null;
  to_stage_key: string | null;
  from_module: ModuleRef | null;
  to_module: ModuleRef | null;
}

export interface ModuleEvent {
  key: string | null;
  name: string | null;
  kind: ModuleEventKind | null;
  from_state: ModuleState | null;
  to_state: ModuleState | null;
  selected: boolean | null;
}

/** Why a stage move happened: the conversion opening the case, a staff move, or module updates completing a stage. */
export type StageMoveCause = 'conversion' | 'manual' | 'modules';

export interface ApplicationOpened {
  type: 'application.opened';
  data: {
    application_id: string;
    lead_id: string;
    case_ref: string;
    number: number;
    stages: CaseStage[];
    modules: CaseModule[];
    opened_at: string;
  };
}
export interface ApplicationStageChanged {
  type: 'application.stage_changed';
  data: { to_stage_id: string; cause: StageMoveCause; payload: ApplicationStatus & { stage_change: StageChange } };
}
export interface ApplicationModuleUpdated {
  type: 'application.module_updated';
  /** `module` is the module after the change; `index` is where it sits in the case's list. */
  data: {
    module_key: string;
    kind: ModuleEventKind;
    module: CaseModule;
    index: number;
    payload: ApplicationStatus & { module_event: ModuleEvent };
  };
}
/** Internal: saving a module's name or details is not a module change and is never delivered. */
export interface ApplicationModuleDetailsSaved {
  type: 'application.module_details_saved';
  data: { module_key: string; name: string; details: Record<string, unknown> };
}
/** Internal: status (active, on hold, closed) is not a webhook event kind. */
export interface ApplicationStatusChanged {
  type: 'application.status_changed';
  data: { from: ApplicationStatusValue; to: ApplicationStatusValue };
}
/** Internal: a staff note on the case's timeline; a note is not a webhook event kind (docs/decisions.md). */
export interface ApplicationNoteAdded {
  type: 'application.note_added';
  data: { at: string; note: string; author: Actor };
}
export interface ApplicationOutcomeRecorded {
  type: 'application.outcome';
  data: { outcome: Outcome; previous_outcome: Outcome | null; payload: ApplicationStatus };
}

export type ApplicationEvent =
  | ApplicationOpened
  | ApplicationStageChanged
  | ApplicationModuleUpdated
  | ApplicationModuleDetailsSaved
  | ApplicationStatusChanged
  | ApplicationOutcomeRecorded
  | ApplicationNoteAdded;

/** Every type of ApplicationEvent, once: the compiler names a type missing here (src/domain/event-types.ts). */
export const APPLICATION_EVENT_TYPES = eventTypes<ApplicationEvent>({
  'application.opened': 'application.opened',
  'application.stage_changed': 'application.stage_changed',
  'application.module_updated': 'application.module_updated',
  'application.module_details_saved': 'application.module_details_saved',
  'application.status_changed': 'application.status_changed',
  'application.outcome': 'application.outcome',
  'application.note_added': 'application.note_added',
});

/** A stored event of an application stream as the domain's event type. */
export const toApplicationEvent = eventReader<ApplicationEvent>(APPLICATION_EVENT_TYPES, 'an application');

export type ApplicationCommand =
  | { type: 'set_module_state'; module_key: string; state: ModuleState }
  | { type: 'select_module'; module_key: string }
  | { type: 'deselect_module'; module_key: string }
  | { type: 'restore_module'; module_key: string }
  | {
      type: 'add_module';
      name: string;
      key?: string;
      after?: string;
      before?: string;
      stage_keys?: string[];
      counts_toward_progress?: boolean;
    }
  | { type: 'save_module_details'; module_key: string; name?: string; details?: Record<string, unknown> }
  | { type: 'move_to_stage'; stage: string }
  | { type: 'set_status'; status: ApplicationStatusValue }
  | { type: 'record_outcome'; outcome: Outcome }
  | { type: 'add_note'; note: string; author: Actor; at: string };

/** A command the case refuses: its kind and the code the caller sees. */
export class ApplicationRefusal extends Refusal {}
