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

/**
 * Given/when/then specifications of a decider, run without a database, after Emmett's DeciderSpecification: `given`
 * events (folded with evolve from the initial state), `when` a command, `then` the events decide returns, or the
 * error it throws.
 */
export function deciderSpec<State, Command, Event>(decider: Decider<State, Command, Event>) {
  return (t: Test) => ({
    given: (events: Event[]) => ({
      when: (command: Command): Then<Event> => {
        const decide = () => decider.decide(events.reduce(decider.evolve, decider.initialState()), command);
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
}
