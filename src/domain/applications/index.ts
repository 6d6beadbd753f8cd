import { streamName } from '../streams.js';

export * from './types.js';
export * from './status.js';
export * from './evolve.js';
export * from './decide.js';

export const applicationStream = (id: string): string => streamName('application', id);
