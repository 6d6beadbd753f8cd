export * from './types.js';
export { cleanFilename, decide, receiveDocument, FILENAME_MAX, REASON_MAX } from './decide.js';
export { evolve, fold, type DocumentFact } from './evolve.js';
export {
  DEFAULT_DOCUMENT_MAX_BYTES,
  DEFAULT_DOCUMENT_TYPES,
  MAX_DOCUMENT_BYTES,
  documentTypesOf,
} from './document-types.js';
