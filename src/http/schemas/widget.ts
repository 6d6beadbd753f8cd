import { Type, type Static } from 'typebox';
import { StringEnum, VISA_TYPES } from '../../shared/enums.js';
import { MetaField } from '../../schemas/meta-field.js';

export const WidgetConfigQuery = Type.Object({
  key: Type.String({ description: 'a public key, `<prefix>_{live|test}_pub_...`' }),
});

/** 200 body of GET /v1/widget/config. */
export const WidgetConfig = Type.Object(
  {
    tenant: Type.Object(
      {
        name: Type.String(),
        brand_color: Type.Union([Type.String(), Type.Null()]),
        logo_url: Type.Union([Type.String(), Type.Null()]),
      },
      { additionalProperties: false },
    ),
    fields: Type.Array(MetaField),
    visa_types: Type.Array(StringEnum(VISA_TYPES)),
    countries: Type.Array(Type.String()),
    captcha: Type.Object(
      { provider: Type.String(), site_key: Type.Union([Type.String(), Type.Null()]) },
      { additionalProperties: false },
    ),
    consent_text: Type.String(),
    consent_text_version: Type.String(),
    test_mode: Type.Boolean(),
  },
  { additionalProperties: false },
);
export type WidgetConfig = Static<typeof WidgetConfig>;
