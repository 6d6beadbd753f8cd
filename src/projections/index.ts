import type { Projection } from './projection.js';

/** Every inline read model, in the order they are applied. */
export const projections: Projection[] = [];
