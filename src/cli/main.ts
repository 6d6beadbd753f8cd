#!/usr/bin/env node
import { debugRequested, reportFailure } from './errors.js';
import { buildProgram } from './program.js';

// The one error path: every failure of every command ends here as a sentence (see errors.ts).
buildProgram()
  .parseAsync(process.argv)
  .catch((error: unknown) => {
    process.exit(reportFailure(error, debugRequested(process.argv, process.env)));
  });
