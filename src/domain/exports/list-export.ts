import { streamName } from '../streams.js';

/**
 * A CSV file of a console list, written to the audit trail before its first row leaves: which list, by which filter
 * and selection, how many rows matched, and (as every event) who and when. A search's text is not kept (it may be a
 * person's name or phone): the filter says only that there was one.
 */
export type ListExported = {
  type: 'list.exported';
  data: {
    list: string;
    /** The filter and sort as a query string, a search's text replaced by `(search)`. */
    filter: string;
    /** `filter`: every row the filter matches; `ids`: rows ticked; `matching`: "all N matching" of a selection. */
    scope: 'filter' | 'ids' | 'matching';
    /** The rows matching when the file began (rows of erased people are left out). */
    count: number;
  };
};

export type ListExportEvent = ListExported;

/** One stream per file: an export is a record of its own, filed under no person. */
export const listExportStream = (id: string): string => streamName('list-export', id);

/** The filter as recorded: every part kept but a search's text. */
export function recordedFilter(parts: readonly [string, string][]): string {
  return new URLSearchParams(parts.map(([k, v]): [string, string] => [k, k === 'q' ? '(search)' : v])).toString();
}
