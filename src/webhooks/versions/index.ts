export * from './names.js';
export { CHANGELOG, type VersionEntry } from './changelog.js';
export {
  ENVELOPE_SCHEMAS,
  EnvelopeV1,
  EnvelopeV2,
  ResourceRef,
  RESOURCE_TYPES,
  SINCE_2026_11_29,
  V1_FIELDS,
} from './schemas.js';
export { STEPS_DOWN } from './steps.js';
export { isWebhookKind, renderAllVersions, renderEnvelope, resourceOf, type RenderableEvent } from './render.js';
