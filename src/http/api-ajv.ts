import { Ajv, type Options as AjvOptions } from 'ajv';
import addFormats from 'ajv-formats';
import { CANONICAL_UUID, isServiceDateTime } from './edge-values.js';

/** The API's ajv: every error, nothing removed or defaulted, ajv-formats with the service's own date-time and uuid. */
export function apiAjv(options: AjvOptions): Ajv {
  const instance = new Ajv({ allErrors: true, removeAdditional: false, useDefaults: false, strict: false, ...options });
  addFormats.default(instance);
  // Stricter than ajv-formats: only what PostgreSQL, JavaScript and the answers can all hold (src/http/edge-values.ts).
  instance.addFormat('date-time', { type: 'string', validate: isServiceDateTime });
  instance.addFormat('uuid', CANONICAL_UUID);
  return instance;
}
