/**
 * An event as its aggregate's evolve reads it: its type and data without the `payload` (the public object the
 * webhook carries, derived from the state and never needed to rebuild it). Distributes over a union of events.
 */
export type WithoutPayload<E> = E extends { type: infer T; data: infer D }
  ? { type: T; data: Omit<D, 'payload'> }
  : never;
