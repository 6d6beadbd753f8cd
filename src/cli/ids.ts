import { CliError } from './output.js';

const CANONICAL_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** An id argument as given, refused with a sentence unless it is a UUID (every id the service hands out is one). */
export function requireId(value: string, what: string): string {
  if (!CANONICAL_UUID.test(value))
    throw new CliError(`"${value}" is not a ${what} id: ids are UUIDs such as 0b6f3c5e-8a1d-4c2b-9e7f-1a2b3c4d5e6f.`);
  return value;
}
