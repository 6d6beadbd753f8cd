import type { EventStore, StoreTransaction } from '../events/event-store.js';
import type { CommandContext, RecordedEvent } from '../events/types.js';
import { NotFoundError } from './errors.js';
import { lockPersonOfStream } from './person-locks.js';
import { runCommand } from './run-command.js';

/**
 * What the command handler needs of an aggregate (after Emmett's `CommandHandler({ evolve, initialState })`): its
 * streams, how its events are read from the log, and its pure evolve and decide. The state before the first event is
 * undefined; an aggregate's decide runs only on a stream that exists (creation is the aggregate's own first command).
 */
export interface Aggregate<State, Event, Command> {
  /** What a refusal for an unknown id names ("No such task"). */
  name: string;
  stream(id: string): string;
  read(event: RecordedEvent): Event;
  evolve(state: State | undefined, event: Event): State;
  decide(state: State, command: Command): Event[];
  /**
   * Where the state is read when not from the stream, with the person's lock taken first (the lead's read-model row:
   * one indexed row, at the stream's last revision, instead of the stream's events opened one by one). Absent: the
   * stream is read and folded, after the lock of the person its data key row names.
   */
  load?(tx: StoreTransaction, id: string): Promise<Loaded<State>>;
}

/** A record's state and the revision of its stream's last event, which the next append expects. */
export interface Loaded<State> {
  state: State;
  revision: number;
}

/** The state after a command and the events it appended, in order (none when it changed nothing). */
export interface Handled<State, Event> {
  state: State;
  events: Event[];
}

/** A command built at the transaction's instant (a retried attempt decides again at its own instant). */
export type CommandAt<Command> = (now: Date) => Command;

/** Load, decide and append for one aggregate: `load` inside a transaction, `handle` as a whole command. */
export function commandHandler<State, Event extends { type: string; data: Record<string, unknown> }, Command>(
  aggregate: Aggregate<State, Event, Command>,
) {
  /** Reads and folds a stream; not found when unknown, another tenant's or the other mode's. */
  async function load(tx: StoreTransaction, id: string): Promise<Loaded<State>> {
    if (aggregate.load) return aggregate.load(tx, id);
    const events = await tx.readStream(aggregate.stream(id));
    const first = events[0];
    const last = events[events.length - 1];
    if (!first || !last || first.tenantId !== tx.context.tenantId || first.sandbox !== tx.context.sandbox)
      throw new NotFoundError(aggregate.name);
    const created = aggregate.evolve(undefined, aggregate.read(first));
    const state = events.slice(1).reduce((s, e) => aggregate.evolve(s, aggregate.read(e)), created);
    return { state, revision: last.revision };
  }

  /**
   * Runs one command on an existing stream in one transaction, retried on a conflict: the person's lock (before the
   * stream is read), load, decide, append at the revision read, and the state after the new events.
   */
  async function handle(
    store: EventStore,
    context: CommandContext,
    id: string,
    command: CommandAt<Command>,
  ): Promise<Handled<State, Event>> {
    return runCommand(store, context, [aggregate.stream(id)], (tx) => handleIn(tx, id, command));
  }

  /**
   * `handle`'s step inside a transaction that named the stream (a bulk action's item runs it so). `before`, when given,
   * runs once the state is loaded and may end the step without deciding (false: undefined is answered), as a bulk
   * item another worker already did.
   */
  async function handleIn(
    tx: StoreTransaction,
    id: string,
    command: CommandAt<Command>,
  ): Promise<Handled<State, Event>>;
  async function handleIn(
    tx: StoreTransaction,
    id: string,
    command: CommandAt<Command>,
    before: (state: State) => Promise<boolean>,
  ): Promise<Handled<State, Event> | undefined>;
  async function handleIn(
    tx: StoreTransaction,
    id: string,
    command: CommandAt<Command>,
    before?: (state: State) => Promise<boolean>,
  ): Promise<Handled<State, Event> | undefined> {
    const stream = aggregate.stream(id);
    if (!aggregate.load) await lockPersonOfStream(tx, stream);
    const { state, revision } = await load(tx, id);
    if (before && !(await before(state))) return undefined;
    const events = aggregate.decide(state, command(tx.context.now));
    await tx.append(stream, revision, events);
    return { state: events.reduce<State>((s, e) => aggregate.evolve(s, e), state), events };
  }

  return { load, handle, handleIn };
}
