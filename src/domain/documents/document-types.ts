import { DOCUMENT_CONTENT_TYPES, type DocumentTypeDef } from './types.js';

/** The largest document any type may allow: 20 MiB, below clamd's default StreamMaxLength (25 MiB). */
export const MAX_DOCUMENT_BYTES = 20 * 1024 * 1024;
/** A type's limit when its definition names none. */
export const DEFAULT_DOCUMENT_MAX_BYTES = 10 * 1024 * 1024;

const type = (key: string, name: string): DocumentTypeDef => ({
  key,
  name,
  max_size_bytes: DEFAULT_DOCUMENT_MAX_BYTES,
  content_types: [...DOCUMENT_CONTENT_TYPES],
});

/** The types of a workspace whose definition names none: what a visa file usually holds. */
export const DEFAULT_DOCUMENT_TYPES: readonly DocumentTypeDef[] = [
  type('passport', 'Passport'),
  type('photo', 'Photograph'),
  type('transcript', 'Academic transcript'),
  type('offer_letter', 'Offer letter'),
  type('bank_statement', 'Bank statement'),
  type('language_test', 'Language test result'),
  type('other', 'Other'),
];

/** A workspace's document types: those of its definition, or the defaults. */
export function documentTypesOf(settings: { document_types?: DocumentTypeDef[] }): readonly DocumentTypeDef[] {
  return settings.document_types && settings.document_types.length > 0
    ? settings.document_types
    : DEFAULT_DOCUMENT_TYPES;
}
