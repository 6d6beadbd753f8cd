import { streamName } from '../streams.js';

export * from './types.js';
export * from './evolve.js';
export * from './decide.js';

export const taskStream = (id: string): string => streamName('task', id);
