// pg exports its lib folder (`"./lib/*"` in its package.json) but ships no types for it; only what the round trip
// uses is declared: the value conversion pg's own queries apply to bind parameters.
declare module 'pg/lib/utils' {
  export function prepareValue(value: unknown): unknown;
}
