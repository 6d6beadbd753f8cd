import {
  decide,
  evolve,
  type ApplicationCommand,
  type ApplicationEvent,
  type ApplicationState,
} from '../../domain/applications/index.js';
import type { EventStore } from '../../events/event-store.js';
import type { CommandContext } from '../../events/types.js';
import { runCommand } from '../run-command.js';
import { lockPersonOfStream } from '../subject.js';
import { applicationStream } from '../../domain/applications/index.js';
import { loadApplication } from './load-application.js';

export interface OperationResult {
  state: ApplicationState;
  /** The events the operation appended, in order; empty when it changed nothing. */
  events: ApplicationEvent[];
}

/** Runs one staff operation on a case (module, stage, status or outcome): load, decide, append. */
export async function applyApplicationOperation(
  store: EventStore,
  context: CommandContext,
  applicationId: string,
  command: ApplicationCommand,
): Promise<OperationResult> {
  const stream = applicationStream(applicationId);
  return runCommand(store, context, [stream], async (tx) => {
    await lockPersonOfStream(tx, stream);
    const { state, revision } = await loadApplication(tx, applicationId);
    const events = decide(state, command);
    await tx.append(stream, revision, events);
    return { state: events.reduce<ApplicationState>((s, e) => evolve(s, e), state), events };
  });
}
