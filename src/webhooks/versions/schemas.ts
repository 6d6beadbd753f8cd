import { Type, type Static, type TObject } from 'typebox';
import { EVENT_KINDS, StringEnum } from '../../shared/enums.js';
import type { PayloadVersion } from './names.js';

/**
 * The envelope of each payload version, one schema per shape: the property test renders every kind at every version
 * against these, and the OpenAPI documents take the current one. `data` is the resource; its typed shape per kind
 * lives in src/http/schemas/event-data.ts and is the same in every version so far.
 */
const Data = Type.Record(Type.String(), Type.Unknown(), { description: 'the resource in its public API shape' });

/** The first version's envelope fields; every version and the per-kind envelopes of the documents build on them. */
export const V1_FIELDS = {
  id: Type.String({ format: 'uuid', description: 'event id; the same on every attempt and resend' }),
  event: StringEnum(EVENT_KINDS),
  tenant_id: Type.String({ format: 'uuid' }),
  created_at: Type.String({ format: 'date-time' }),
  data: Data,
};

export const RESOURCE_TYPES = ['lead', 'application', 'document', 'invoice', 'task', 'webhook_endpoint'] as const;
export type ResourceType = (typeof RESOURCE_TYPES)[number];

/** Since 2026-11-29: the resource the event changed and its version after the change (its stream position). */
export const ResourceRef = Type.Object(
  {
    type: StringEnum(RESOURCE_TYPES, {
      description: 'what kind of resource: payments and refunds belong to their invoice, webhook.test to its endpoint',
    }),
    id: Type.String({ format: 'uuid' }),
    version: Type.Integer({
      minimum: 1,
      description:
        "the resource's version after this event: it grows with every change of the resource, including changes no webhook is sent for (so it may skip numbers). Keep the highest version applied per resource id and drop a payload whose version is not higher",
    }),
  },
  { additionalProperties: false },
);

/** The fields version 2026-11-29 added to the envelope (kept apart so the OpenAPI `webhooks` section can add them). */
export const SINCE_2026_11_29 = {
  payload_version: Type.Literal('2026-11-29', { description: 'the payload version this body is in' }),
  resource: ResourceRef,
};

export const EnvelopeV1 = Type.Object(V1_FIELDS, { additionalProperties: false });
export const EnvelopeV2 = Type.Object(
  {
    id: V1_FIELDS.id,
    event: V1_FIELDS.event,
    tenant_id: V1_FIELDS.tenant_id,
    created_at: V1_FIELDS.created_at,
    ...SINCE_2026_11_29,
    data: Data,
  },
  { additionalProperties: false },
);
export type EnvelopeV1 = Static<typeof EnvelopeV1>;
export type EnvelopeV2 = Static<typeof EnvelopeV2>;

/** Each version's envelope schema. */
export const ENVELOPE_SCHEMAS: Record<PayloadVersion, TObject> = {
  '2026-11-22': EnvelopeV1,
  '2026-11-29': EnvelopeV2,
};
