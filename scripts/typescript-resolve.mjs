// Lets Node run this project's TypeScript as it is: Node strips the types itself (Node 24), and this hook maps a
// relative `./x.js` import written in a .ts file (the form tsc's NodeNext resolution asks for) to `./x.ts` when no
// .js file is there. Loaded with `node --import ./scripts/typescript-resolve.mjs` by the tests and the benches.
// Synchronous and in the loading thread (module.registerHooks), so a process pays microseconds per import, where a
// transpiling loader's hooks cost a suite's process about a second of CPU.
import { existsSync } from 'node:fs';
import { registerHooks } from 'node:module';
import { fileURLToPath } from 'node:url';

registerHooks({
  resolve(specifier, context, nextResolve) {
    if (specifier.endsWith('.js') && specifier.startsWith('.') && context.parentURL?.endsWith('.ts')) {
      const target = new URL(specifier, context.parentURL);
      if (!existsSync(fileURLToPath(target))) return nextResolve(`${specifier.slice(0, -3)}.ts`, context);
    }
    return nextResolve(specifier, context);
  },
});
