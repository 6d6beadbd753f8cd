export * from './types.js';
export * from './evolve.js';
export * from './decide.js';
