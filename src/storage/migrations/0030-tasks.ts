export const name = 'tasks';

// Both tables are read models of the task streams, written inside the appending transaction and rebuilt from the log.
// `task_timers` is the durable timer: one row per task whose task.overdue is still to come, with the due time it
// fires at. The timer runner claims due rows with FOR UPDATE SKIP LOCKED; appending task.overdue deletes the row in
// the same transaction (through the projection), so a fired timer is gone exactly when its event exists.
export const sql = `
CREATE TABLE tasks (
  id              uuid PRIMARY KEY,
  tenant_id       uuid NOT NULL,
  sandbox         boolean NOT NULL,
  lead_id         uuid,
  application_id  uuid,
  state           jsonb NOT NULL,
  body            jsonb NOT NULL,
  revision        integer NOT NULL,
  due_at          timestamptz NOT NULL,
  created_at      timestamptz NOT NULL,
  updated_at      timestamptz NOT NULL
);
CREATE INDEX tasks_lead ON tasks (tenant_id, sandbox, lead_id, due_at) WHERE lead_id IS NOT NULL;
CREATE INDEX tasks_application ON tasks (tenant_id, sandbox, application_id, due_at) WHERE application_id IS NOT NULL;

CREATE TABLE task_timers (
  task_id    uuid PRIMARY KEY,
  tenant_id  uuid NOT NULL,
  sandbox    boolean NOT NULL,
  due_at     timestamptz NOT NULL
);
CREATE INDEX task_timers_due ON task_timers (due_at);
`;
