import { Type, type Static } from 'typebox';
import { StringEnum, VISA_TYPES } from '../../shared/enums.js';
import { MetaField } from '../../schemas/meta-field.js';

/** 200 body of GET /v1/meta/fields. */
export const MetaFields = Type.Object(
  {
    fields: Type.Array(MetaField, {
      description: "the workspace's custom fields; their keys are the keys of LeadCreate.custom_fields",
    }),
    visa_types: Type.Array(StringEnum(VISA_TYPES)),
    countries: Type.Array(Type.String({ description: 'ISO 3166-1 alpha-2' })),
  },
  { additionalProperties: false },
);
export type MetaFields = Static<typeof MetaFields>;
