export * from './types.js';
export * from './money.js';
export * from './evolve.js';
export * from './decide.js';
