import { streamName } from '../streams.js';

export * from './types.js';
export {
  checkUpload,
  cleanFilename,
  decide,
  decideReceive,
  FILENAME_MAX,
  REASON_MAX,
  type CheckedUpload,
} from './decide.js';
export { evolve, fold, type DocumentFact } from './evolve.js';
export {
  DEFAULT_DOCUMENT_MAX_BYTES,
  DEFAULT_DOCUMENT_TYPES,
  MAX_DOCUMENT_BYTES,
  documentTypesOf,
} from './document-types.js';

export const documentStream = (id: string): string => streamName('document', id);
