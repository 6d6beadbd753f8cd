import { Type, type Static } from 'typebox';
import {
  APPLICATION_STATUSES,
  MODULE_EVENT_KINDS,
  MODULE_STATES,
  OUTCOMES,
  STAGE_DIRECTIONS,
} from '../domain/applications/types.js';
import { StringEnum } from '../shared/enums.js';
import { WorkspaceRef } from './workspace-ref.js';

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) => Type.Union([schema, Type.Null()]);
const Uuid = Type.String({ format: 'uuid' });
const Key = Type.String({ pattern: '^[a-z][a-z0-9_]{0,59}$' });

export const ModuleRef = Type.Object({ key: Type.String(), name: Type.String() }, { additionalProperties: false });

const statusFields = {
  id: Uuid,
  reference: Type.String({ description: 'alias of case_ref, like APP-<number>' }),
  case_ref: Type.String({ description: 'case reference (v1.2)' }),
  stage: Type.Object(
    { key: Type.String(), name: Type.String(), position: Type.Integer() },
    { additionalProperties: false },
  ),
  progress: Type.Integer({
    minimum: 0,
    maximum: 100,
    description: 'percent of counted selected modules that are updated, rounded down; 0 when none count',
  }),
  status: StringEnum(APPLICATION_STATUSES),
  outcome: Nullable(StringEnum(OUTCOMES)),
  module: Nullable(ModuleRef),
  modules: Type.Array(
    Type.Object(
      { key: Type.String(), name: Type.String(), state: StringEnum(MODULE_STATES) },
      { additionalProperties: false },
    ),
  ),
  current_module: Nullable(ModuleRef),
  module_progress: Nullable(
    Type.Object(
      { updated: Type.Integer({ minimum: 0 }), total: Type.Integer({ minimum: 0 }) },
      { additionalProperties: false },
    ),
  ),
};

/** The spec's ApplicationStatus: every field present, nothing else. */
export const ApplicationStatus = Type.Object(statusFields, { additionalProperties: false });
export type ApplicationStatus = Static<typeof ApplicationStatus>;

export const StageChange = Type.Object(
  {
    from_stage_id: Nullable(Uuid),
    to_stage_id: Nullable(Uuid),
    direction: Nullable(StringEnum(STAGE_DIRECTIONS)),
    passed_stage_ids: Type.Array(Uuid),
    from_stage_key: Nullable(Type.String()),
    to_stage_key: Nullable(Type.String()),
    from_module: Nullable(ModuleRef),
    to_module: Nullable(ModuleRef),
  },
  { additionalProperties: false },
);

export const ModuleEvent = Type.Object(
  {
    key: Nullable(Type.String()),
    name: Nullable(Type.String()),
    kind: Nullable(StringEnum(MODULE_EVENT_KINDS)),
    from_state: Nullable(StringEnum(MODULE_STATES)),
    to_state: Nullable(StringEnum(MODULE_STATES)),
    selected: Nullable(Type.Boolean()),
  },
  { additionalProperties: false },
);

/** `data` of the application webhook events. */
export const StageChangedData = Type.Object(
  { ...statusFields, stage_change: StageChange },
  { additionalProperties: false },
);
export const ModuleUpdatedData = Type.Object(
  { ...statusFields, module_event: ModuleEvent },
  { additionalProperties: false },
);
export const OutcomeData = ApplicationStatus;

/** What the admin interface (the workspace UI's back end) shows of a case: the status plus everything staff work on. */
export const AdminApplication = Type.Object(
  {
    ...statusFields,
    lead_id: Uuid,
    sandbox: Type.Boolean(),
    opened_at: Type.String({ format: 'date-time' }),
    stages: Type.Array(
      Type.Object(
        { id: Uuid, key: Type.String(), name: Type.String(), position: Type.Integer() },
        { additionalProperties: false },
      ),
    ),
    roadmap: Type.Array(
      Type.Object(
        {
          key: Type.String(),
          name: Type.String(),
          state: StringEnum(MODULE_STATES),
          selected: Type.Boolean(),
          optional: Type.Boolean(),
          custom: Type.Boolean(),
          counts_toward_progress: Type.Boolean(),
          stages: Type.Array(Type.String()),
          details: Type.Record(Type.String(), Type.Unknown()),
        },
        { additionalProperties: false },
      ),
      { description: 'every module of the case in order, switched on or off' },
    ),
  },
  { additionalProperties: false },
);
export type AdminApplication = Static<typeof AdminApplication>;

export const AdminApplicationParams = Type.Object({ workspace: WorkspaceRef, id: Uuid });
export const AdminModuleParams = Type.Object({ workspace: WorkspaceRef, id: Uuid, module: Key });
export const AdminLeadParams = Type.Object({ workspace: WorkspaceRef, leadId: Uuid });
export const ModeQuery = Type.Object(
  {
    sandbox: Type.Optional(
      Type.Boolean({ description: 'act on the sandbox (test-mode data) instead of live data', default: false }),
    ),
  },
  { additionalProperties: false },
);

export const ModuleStateBody = Type.Object({ state: StringEnum(MODULE_STATES) }, { additionalProperties: false });
export const AddModuleBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 120 }),
    key: Type.Optional(Key),
    after: Type.Optional(Key),
    before: Type.Optional(Key),
    stage_keys: Type.Optional(Type.Array(Key, { maxItems: 50 })),
    counts_toward_progress: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);
export const SaveModuleBody = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 120 })),
    details: Type.Optional(
      Type.Record(Type.String({ maxLength: 60 }), Type.Unknown(), {
        description: 'merged per key; a null value removes that key',
      }),
    ),
  },
  { additionalProperties: false },
);
export const MoveStageBody = Type.Object(
  { stage: Type.String({ minLength: 1, maxLength: 60, description: 'target stage key or id' }) },
  { additionalProperties: false },
);
export const SetStatusBody = Type.Object({ status: StringEnum(APPLICATION_STATUSES) }, { additionalProperties: false });
export const OutcomeBody = Type.Object({ outcome: StringEnum(OUTCOMES) }, { additionalProperties: false });
