#!/usr/bin/env node
// The project runs on the Node 24 LTS that `npm ci` puts in node_modules (the `node` package). npm's scripts find it
// first on PATH; started by an older Node from a shell, this file hands over to that one.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const projectNode = fileURLToPath(new URL('../node_modules/node/bin/node', import.meta.url));
const major = Number(process.versions.node.split('.')[0]);

if (major < 24 && existsSync(projectNode)) {
  const child = spawn(projectNode, [fileURLToPath(import.meta.url), ...process.argv.slice(2)], { stdio: 'inherit' });
  const forward = (signal) => child.kill(signal);
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, forward);
  child.on('exit', (code, signal) => {
    if (!signal) process.exit(code ?? 1);
    for (const name of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.off(name, forward);
    process.kill(process.pid, signal);
  });
} else {
  await import('../dist/cli/visa-crm.mjs');
}
