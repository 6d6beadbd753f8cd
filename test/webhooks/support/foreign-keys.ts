import type { Test } from 'tap';
import type { SeededWorkspace } from '../../support/app.js';
import type { Harness } from './harness.js';

/**
 * The calls on an endpoint that must find nothing: another workspace's live and test keys, a key of the other mode,
 * and an id that names nothing. Each is [why, endpoint id, key].
 */
export function foreignReaches(
  h: Harness,
  endpoints: { live: string; test: string },
  other: SeededWorkspace,
): (readonly [string, string, string])[] {
  return [
    ["another workspace's live key", endpoints.live, other.live],
    ["another workspace's test key", endpoints.test, other.test],
    ['a test key for a live endpoint', endpoints.live, h.ws.test],
    ['a live key for a test endpoint', endpoints.test, h.ws.live],
    ['an id that names nothing', '0b6f3c5e-8a1d-4c2b-9e7f-1a2b3c4d5e6f', h.ws.live],
  ];
}

/** Each foreign reach answered 404 `not_found` by `call` (the endpoint's route with that id and key). */
export async function eachNotFound(
  t: Test,
  reaches: (readonly [string, string, string])[],
  call: (id: string, key: string, why: string) => Promise<Response>,
): Promise<void> {
  for (const [why, id, key] of reaches) {
    const response = await call(id, key, why);
    t.equal(response.status, 404, why);
    t.equal(((await response.json()) as { error: string }).error, 'not_found', why);
  }
}
