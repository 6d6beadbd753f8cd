#!/usr/bin/env node
import { CommanderError } from 'commander';
import { debugRequested, reportFailure } from './errors.js';
import { buildProgram } from './program.js';

/** How long a failed command may take to let go of what it opened before it is made to exit. */
const EXIT_GRACE_MS = 2_000;

// The one exit path: commander's own exits (help, a refused option; it has printed them) and every failure of every
// command, which ends here as a sentence (see errors.ts).
buildProgram()
  .parseAsync(process.argv)
  .catch((error: unknown) => {
    if (error instanceof CommanderError) {
      process.exitCode = error.exitCode;
      return;
    }
    process.exitCode = reportFailure(error, debugRequested(process.argv, process.env));
    // Out through the event loop, not process.exit(): that tears V8's worker threads down with the isolate alive, and
    // a compile job there waiting for a garbage collection hangs the process for good (nodejs/node#54918, met by the
    // suites on 2026-11-30). Should the failure leave a handle open, the unreferenced timer ends it.
    setTimeout(() => process.exit(), EXIT_GRACE_MS).unref();
  });
