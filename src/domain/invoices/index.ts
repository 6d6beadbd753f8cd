import { streamName } from '../streams.js';

export * from './types.js';
export * from './money.js';
export * from './evolve.js';
export * from './decide.js';

export const invoiceStream = (id: string): string => streamName('invoice', id);
