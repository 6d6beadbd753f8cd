import {
  applicationStream,
  decide,
  evolve,
  toApplicationEvent,
  type ApplicationCommand,
  type ApplicationEvent,
  type ApplicationState,
} from '../../domain/applications/index.js';
import { commandHandler, type Handled } from '../command-handler.js';

const applications = commandHandler<ApplicationState, ApplicationEvent, ApplicationCommand>({
  name: 'application',
  stream: applicationStream,
  read: toApplicationEvent,
  evolve,
  decide,
});

/** Reads and folds a case's stream inside the transaction; 404 when it is unknown, another tenant's or the other mode's. */
export const loadApplication = applications.load;

export type ApplicationResult = Handled<ApplicationState, ApplicationEvent>;

/** Runs one staff command on a case (module, stage, status or outcome): load, decide, append. */
export const handleApplicationCommand = applications.handle;

/** One command on a case inside a transaction that named its stream. */
export const handleApplicationCommandIn = applications.handleIn;
