import fc from 'fast-check';
import t from 'tap';
import {
  decideCreate,
  decide,
  evolve,
  fold,
  taskView,
  timerDue,
  TaskRefusal,
  type TaskCommand,
  type TaskEvent,
  type TaskState,
} from '../../src/domain/tasks/index.js';
import { deciderSpec, onExisting } from '../support/decider-spec.js';
import { checkProperty } from '../support/properties.js';

const T0 = new Date('2026-11-01T10:00:00.000Z');
const at = (minutes: number) => new Date(T0.getTime() + minutes * 60_000);
const ASHA = { user_id: '00000000-0000-4000-8000-0000000000a1', email: 'asha@northstar.example', name: 'Asha' };
const LEAD = '00000000-0000-4000-8000-000000000001';

/** Given the events so far, when a command runs: then these events (test/support/decider-spec.ts, no database). */
const spec = deciderSpec<TaskState | undefined, TaskCommand, TaskEvent>({
  decide: onExisting(decide),
  evolve,
  initialState: () => undefined,
});
const given = spec.after;

const created = (due = at(60)): TaskEvent[] =>
  decideCreate({
    task_id: '00000000-0000-4000-8000-0000000000f1',
    subject: { lead_id: LEAD, application_id: null },
    person_id: LEAD,
    title: '  Call about the passport scan ',
    assignee: ASHA,
    due_at: due,
    now: T0,
  });

t.test('creation: an open task with its due time armed, title trimmed', async (t) => {
  const { state } = given(created());
  t.match(taskView(state), {
    lead_id: LEAD,
    application_id: null,
    title: 'Call about the passport scan',
    status: 'open',
    overdue: false,
    due_at: at(60).toISOString(),
    assignee: ASHA,
    completed_at: null,
  });
  t.equal(timerDue(state), at(60).toISOString());
  t.throws(
    () =>
      decideCreate({
        task_id: 'x',
        subject: { lead_id: LEAD, application_id: null },
        person_id: LEAD,
        title: '   ',
        assignee: null,
        due_at: at(1),
        now: T0,
      }),
    TaskRefusal,
  );
  t.throws(() =>
    decideCreate({
      task_id: 'x',
      subject: { lead_id: LEAD, application_id: null },
      person_id: LEAD,
      title: 'ok',
      assignee: null,
      due_at: new Date('nonsense'),
      now: T0,
    }),
  );
});

t.test('the timer: nothing before the due time, task.overdue once after it', async (t) => {
  spec(t)
    .given(created())
    .when({ type: 'mark_overdue', now: at(59) })
    .thenNothing('not yet due');
  const fired = given(created()).when({ type: 'mark_overdue', now: at(60) });
  t.equal(fired.length, 1);
  t.match(fired[0], {
    type: 'task.overdue',
    data: { due_at: at(60).toISOString(), payload: { overdue: true, status: 'open' } },
  });
  const after = given([...created(), ...fired]);
  t.equal(timerDue(after.state), null, 'the timer is disarmed');
  t.same(after.when({ type: 'mark_overdue', now: at(600) }), [], 'never twice for one due time');
});

t.test('completing before the due time emits nothing; reopening re-arms unless already announced', async (t) => {
  const completed = [...created(), ...given(created()).when({ type: 'complete', now: at(30) })];
  t.equal(given(completed).state.status, 'completed');
  t.equal(timerDue(given(completed).state), null);
  spec(t)
    .given(completed)
    .when({ type: 'mark_overdue', now: at(90) })
    .thenNothing();
  spec(t)
    .given(completed)
    .when({ type: 'complete', now: at(31) })
    .thenNothing('completing twice changes nothing');
  const reopened = [...completed, ...given(completed).when({ type: 'reopen', now: at(40) })];
  t.equal(timerDue(given(reopened).state), at(60).toISOString(), 'reopened: armed again');
  t.equal(given(reopened).when({ type: 'mark_overdue', now: at(61) }).length, 1);

  const announced = [...created(), ...given(created()).when({ type: 'mark_overdue', now: at(61) })];
  const done = [...announced, ...given(announced).when({ type: 'complete', now: at(62) })];
  const again = [...done, ...given(done).when({ type: 'reopen', now: at(63) })];
  t.equal(timerDue(given(again).state), null, 'reopened after its overdue was sent: nothing more for that due time');
  t.equal(taskView(given(again).state).overdue, true, 'and it shows overdue');
});

t.test('moving the due time re-arms the timer', async (t) => {
  const announced = [...created(), ...given(created()).when({ type: 'mark_overdue', now: at(61) })];
  const moved = given(announced).when({ type: 'change', due_at: at(120), now: at(62) });
  t.match(moved, [{ type: 'task.changed', data: { due_at: at(120).toISOString() } }]);
  const state = given([...announced, ...moved]).state;
  t.equal(timerDue(state), at(120).toISOString());
  t.equal(taskView(state).overdue, false);
  t.same(
    given(announced).when({ type: 'change', title: 'Call about the passport scan', now: at(62) }),
    [],
    'no change',
  );
});

/** Commands in time order, as staff and the timer might send them. */
const commandArb = fc.oneof(
  fc.record({ type: fc.constant('change' as const), due: fc.integer({ min: 0, max: 200 }) }),
  fc.record({ type: fc.constant('complete' as const) }),
  fc.record({ type: fc.constant('reopen' as const) }),
  fc.record({ type: fc.constant('mark_overdue' as const) }),
);

t.test('properties: task.overdue only when open and due, at most once per due time between moves', async (t) => {
  await checkProperty(
    t,
    'overdue at most once per armed due time',
    fc.property(fc.array(fc.tuple(commandArb, fc.integer({ min: 1, max: 30 })), { maxLength: 40 }), (steps) => {
      let events = created(at(50));
      let state: TaskState = fold(events)!;
      let clock = 0;
      let firedSinceMove = 0;
      for (const [step, elapsed] of steps) {
        clock += elapsed;
        const now = at(clock);
        const command: TaskCommand =
          step.type === 'change' ? { type: 'change', due_at: at(step.due), now } : { type: step.type, now };
        const before = state;
        const appended = decide(state, command);
        for (const event of appended) {
          if (event.type === 'task.overdue') {
            if (before.status !== 'open') return false;
            if (new Date(event.data.due_at).getTime() > now.getTime()) return false;
            firedSinceMove += 1;
          }
          if (event.type === 'task.changed' && event.data.due_at !== before.due_at) firedSinceMove = 0;
          state = evolve(state, event);
        }
        events = [...events, ...appended];
        if (firedSinceMove > 1) return false;
        if (state.status === 'completed' && timerDue(state) !== null) return false;
      }
      // Folding the whole history gives the state the steps built.
      return JSON.stringify(fold(events)) === JSON.stringify(state);
    }),
    300,
  );
});
