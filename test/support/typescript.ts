import path from 'node:path';

/**
 * The arguments after `node` that let a child process load this project's TypeScript sources: Node strips the types
 * and scripts/typescript-resolve.mjs maps their `.js` imports to the `.ts` files (the same as tap's node-arg).
 */
export const TYPESCRIPT_ARGS = ['--import', path.resolve(import.meta.dirname, '../../scripts/typescript-resolve.mjs')];
