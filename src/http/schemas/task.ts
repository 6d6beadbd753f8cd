import { Type, type Static } from 'typebox';
import { TASK_STATUSES, TITLE_MAX } from '../../domain/tasks/index.js';
import { StringEnum } from '../../shared/enums.js';
import { WorkspaceRef } from '../../schemas/workspace-ref.js';
import { EXACTLY_ONE_SUBJECT } from './subject.js';

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) => Type.Union([schema, Type.Null()]);
const Uuid = Type.String({ format: 'uuid' });
const DateTime = Type.String({ format: 'date-time' });
const StaffEmail = Type.String({ format: 'email', maxLength: 254, description: 'an active user of the workspace' });

export const TaskAssignee = Type.Object(
  { user_id: Uuid, email: Type.String(), name: Type.String() },
  { additionalProperties: false, description: 'the staff member the task is assigned to' },
);

/** The public Task: the admin interface's answer and the `data` of the task.overdue webhook event. */
export const Task = Type.Object(
  {
    id: Uuid,
    lead_id: Nullable(Uuid),
    application_id: Nullable(Uuid),
    title: Type.String({ minLength: 0, maxLength: TITLE_MAX, description: 'empty once its person is erased' }),
    assignee: Nullable(TaskAssignee),
    due_at: DateTime,
    status: StringEnum(TASK_STATUSES),
    overdue: Type.Boolean({
      description: 'open and past the due time task.overdue was sent for; a new due time clears it',
    }),
    created_at: DateTime,
    updated_at: DateTime,
    completed_at: Nullable(DateTime),
  },
  {
    additionalProperties: false,
    description: 'A task for staff on a lead or an application (exactly one of lead_id and application_id is set)',
  },
);
export type Task = Static<typeof Task>;

export const CreateTaskBody = Type.Object(
  {
    lead_id: Type.Optional(Uuid),
    application_id: Type.Optional(Uuid),
    title: Type.String({ minLength: 1, maxLength: TITLE_MAX }),
    assignee: Type.Optional(Nullable(StaffEmail)),
    due_at: DateTime,
  },
  { additionalProperties: false, ...EXACTLY_ONE_SUBJECT },
);
export type CreateTaskBody = Static<typeof CreateTaskBody>;

export const ChangeTaskBody = Type.Object(
  {
    title: Type.Optional(Type.String({ minLength: 1, maxLength: TITLE_MAX })),
    assignee: Type.Optional(Nullable(StaffEmail)),
    due_at: Type.Optional(Type.String({ format: 'date-time', description: 'a new due time re-arms task.overdue' })),
  },
  { additionalProperties: false, minProperties: 1 },
);

export const TaskParams = Type.Object({ workspace: WorkspaceRef, id: Uuid }, { additionalProperties: false });
export const TaskListQuery = Type.Object(
  {
    lead_id: Type.Optional(Uuid),
    application_id: Type.Optional(Uuid),
    sandbox: Type.Optional(Type.Boolean({ description: 'sandbox (test-mode) data; live by default' })),
  },
  { additionalProperties: false },
);
export const TaskList = Type.Object(
  { data: Type.Array(Task) },
  { additionalProperties: false, description: 'By due time, at most 500' },
);
