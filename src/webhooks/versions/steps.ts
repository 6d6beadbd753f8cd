import type { EnvelopeV1, EnvelopeV2 } from './schemas.js';

/**
 * The transformations between payload versions, one per step, each from a version's envelope to the one before it.
 * Events are stored once, in no version: the newest envelope is built from the event (render.ts), and an older
 * version is the newest taken down step by step. A new version adds its envelope type, one step here (from it to
 * the version before) and its changelog entry; the older steps stay as they are.
 */
export const STEPS_DOWN = {
  /** 2026-11-29 → 2026-11-22: the envelope loses `payload_version` and `resource`; `data` is the same. */
  '2026-11-29': (envelope: EnvelopeV2): EnvelopeV1 => ({
    id: envelope.id,
    event: envelope.event,
    tenant_id: envelope.tenant_id,
    created_at: envelope.created_at,
    data: envelope.data,
  }),
} as const;
