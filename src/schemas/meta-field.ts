import { Type, type Static } from 'typebox';
import { FIELD_TYPES, StringEnum } from '../shared/enums.js';

/** The element shape of MetaFields.fields and WidgetConfig.fields; also how a workspace definition declares custom fields. */
export const MetaField = Type.Object(
  {
    key: Type.Optional(Type.String()),
    label: Type.Optional(Type.String()),
    type: Type.Optional(StringEnum(FIELD_TYPES)),
    required: Type.Optional(Type.Boolean()),
    options: Type.Optional(
      Type.Array(Type.Object({ value: Type.String(), label: Type.String() }, { additionalProperties: false })),
    ),
    help_text: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  },
  { additionalProperties: false },
);
export type MetaField = Static<typeof MetaField>;
