/**
 * The payload versions, oldest first, each a date: the day its shape shipped. An endpoint keeps the version it was
 * created on until its owner changes it; the Events API answers in the version a request names (`Visa-CRM-Version`),
 * else the workspace's default. Adding a version: its name here, its step in steps.ts, its entry in changelog.ts.
 */
export const PAYLOAD_VERSIONS = ['2026-11-22', '2026-11-29'] as const;
export type PayloadVersion = (typeof PAYLOAD_VERSIONS)[number];

/** Version 1: the envelope as it shipped on 2026-11-22 (`id`, `event`, `tenant_id`, `created_at`, `data`). */
export const FIRST_PAYLOAD_VERSION: PayloadVersion = PAYLOAD_VERSIONS[0];
/** What new endpoints and new workspaces get. */
export const CURRENT_PAYLOAD_VERSION: PayloadVersion = PAYLOAD_VERSIONS[PAYLOAD_VERSIONS.length - 1]!;

/** The request header naming the version an Events API answer is given in (and which the answer repeats). */
export const VERSION_HEADER = 'Visa-CRM-Version';

export const isPayloadVersion = (value: unknown): value is PayloadVersion =>
  typeof value === 'string' && (PAYLOAD_VERSIONS as readonly string[]).includes(value);

/**
 * The version a stored setting names; absent (an endpoint, delivery or workspace stored before versions existed) or
 * unknown is version 1, the shape those were receiving.
 */
export const payloadVersionOf = (value: unknown): PayloadVersion =>
  isPayloadVersion(value) ? value : FIRST_PAYLOAD_VERSION;
