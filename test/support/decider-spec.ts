import type { Test } from 'tap';

/** A decider: pure decide and evolve functions and the state before any event (Emmett's Decider shape). */
export interface Decider<State, Command, Event> {
  decide(state: State, command: Command): Event[];
  evolve(state: State, event: Event): State;
  initialState(): State;
}

export interface Then<Event> {
  /** The command's events are exactly these. */
  then(expected: Event[], message?: string): void;
  /** The command's events match this pattern (tap's `t.match`: listed fields only). */
  thenMatches(pattern: unknown[], message?: string): void;
  /** The command changes nothing: no events. */
  thenNothing(message?: string): void;
  /** The command is refused with an error matching this pattern (class instance or fields). */
  thenThrows(expected: Error | Record<string, unknown>, message?: string): void;
}

/** Given events, without assertions: the state they make, and what a command decides on it (for tests that go on). */
export interface After<State, Command, Event> {
  state: NonNullable<State>;
  when(command: Command): Event[];
  /** The state after these events and `more` (the events a `when` returned). */
  after(more: readonly Event[]): NonNullable<State>;
}

/**
 * The decide of an aggregate whose first event creates it (by a `decide<Verb>` of its own): a command before that
 * event is a mistake of the test, not a refusal.
 */
export function onExisting<State, Command, Event>(
  decide: (state: State, command: Command) => Event[],
): (state: State | undefined, command: Command) => Event[] {
  return (state, command) => {
    if (state === undefined) throw new Error('A command given no events: the record does not exist');
    return decide(state, command);
  };
}

/**
 * Given/when/then specifications of a decider, run without a database, after Emmett's DeciderSpecification: `given`
 * events (folded with evolve from the initial state), `when` a command, `then` the events decide returns, or the
 * error it throws. `spec.after(events)` gives the same fold and decide without asserting, for a test that checks the
 * state or carries the events on.
 */
export function deciderSpec<State, Command, Event>(decider: Decider<State, Command, Event>) {
  const stateAfter = (events: readonly Event[]): State => events.reduce(decider.evolve, decider.initialState());
  const existing = (events: readonly Event[]): NonNullable<State> => {
    const state = stateAfter(events);
    if (state === undefined || state === null) throw new Error('The given events make no record');
    return state;
  };
  const after = (events: readonly Event[]): After<State, Command, Event> => {
    const state = existing(events);
    return {
      state,
      when: (command) => decider.decide(state, command),
      after: (more) => existing([...events, ...more]),
    };
  };
  const spec = (t: Test) => ({
    given: (events: Event[]) => ({
      when: (command: Command): Then<Event> => {
        const decide = () => decider.decide(stateAfter(events), command);
        return {
          then: (expected, message = 'then these events') => void t.same(decide(), expected, message),
          thenMatches: (pattern, message = 'then events like these') => {
            const actual = decide();
            t.equal(actual.length, pattern.length, `${message}: as many events`);
            t.match(actual, pattern, message);
          },
          thenNothing: (message = 'then no events') => void t.same(decide(), [], message),
          thenThrows: (expected, message = 'then refused') => {
            let events: Event[];
            try {
              events = decide();
            } catch (error) {
              t.match(error, expected, message);
              return;
            }
            t.fail(`${message}: decided ${JSON.stringify(events)} instead`);
          },
        };
      },
    }),
  });
  return Object.assign(spec, { after });
}
