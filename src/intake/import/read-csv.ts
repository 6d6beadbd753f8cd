import { createHash } from 'node:crypto';
import { once } from 'node:events';
import type { Readable } from 'node:stream';
import { CsvError, parse, type Options } from 'csv-parse';
import { FileRefusal } from './file-refusal.js';
import { Utf8Decoder } from './utf8.js';

/** The most a CSV record (one row, quoted newlines included) may hold, in characters. */
export const MAX_RECORD_CHARACTERS = 64 * 1024;

/** One record of the file: its cells as written (quotes undone) and the line it starts on (the header is line 1). */
export interface CsvRecord {
  cells: string[];
  line: number;
}

export interface ReadCsv {
  records: AsyncGenerator<CsvRecord>;
  /** The SHA-256 of the file's bytes and their count, known once `records` is finished. */
  digest(): { sha256: string; bytes: number };
}

const LINE_BREAKS = /\r\n|\r|\n/g;

const OPTIONS: Options = {
  bom: true,
  relax_column_count: true,
  skip_empty_lines: true,
  // Files mix their line ends (a row typed in another program): each of them ends a record.
  record_delimiter: ['\r\n', '\n', '\r'],
  max_record_size: MAX_RECORD_CHARACTERS,
};

/**
 * The records of a CSV file as it streams in, never holding it whole: UTF-8 decoded (or refused, src/intake/import/
 * utf8.ts), parsed by csv-parse (RFC 4180: quoted cells may hold commas, quotes and newlines), with the line each
 * record starts on. A file cut inside a quoted cell, or with a stray quote, is refused with its line. What the
 * consumer does not read is still drained, so the upload's request ends.
 */
export function readCsv(file: Readable): ReadCsv {
  const hash = createHash('sha256');
  let bytes = 0;
  // Lines are counted here, as the parser reads (ahead of the consumer): csv-parse counts a CRLF inside a quoted
  // cell as two. A record starts after the previous one, its line breaks, and the empty lines skipped since.
  const read = { next: 1, emptyLines: 0 };
  const numbered = (cells: string[], info: { empty_lines: number }): CsvRecord => {
    const line = read.next + (info.empty_lines - read.emptyLines);
    read.emptyLines = info.empty_lines;
    read.next = line + 1 + cells.reduce((n, cell) => n + (cell.match(LINE_BREAKS)?.length ?? 0), 0);
    return { cells, line };
  };
  // csv-parse's types give `on_record` the record's own type in and out; it may return any value (the record emitted).
  const parser = parse({ ...OPTIONS, on_record: numbered as unknown as Options['on_record'] });
  const decoder = new Utf8Decoder();
  const feeding = (async () => {
    try {
      for await (const chunk of file as AsyncIterable<Buffer>) {
        hash.update(chunk);
        bytes += chunk.length;
        if (parser.destroyed) continue;
        try {
          if (!parser.write(decoder.decode(chunk))) await drainedOrClosed(parser);
        } catch (error) {
          parser.destroy(error as Error);
        }
      }
      if (!parser.destroyed) parser.end(decoder.end());
    } catch (error) {
      // The upload itself failed (a body cut short) or the last bytes were no UTF-8: the reader hears it.
      if (!parser.destroyed) parser.destroy(error as Error);
    }
  })();
  let digest: string | null = null;
  return {
    records: recordsOf(parser, feeding, read),
    digest() {
      digest ??= hash.digest('hex');
      return { sha256: digest, bytes };
    },
  };
}

/** Until the parser takes more input or is closed; the wait that loses is called off, so no listener is left behind. */
async function drainedOrClosed(parser: ReturnType<typeof parse>): Promise<void> {
  const loser = new AbortController();
  try {
    await Promise.race([
      once(parser, 'drain', { signal: loser.signal }),
      once(parser, 'close', { signal: loser.signal }),
    ]);
  } finally {
    loser.abort();
  }
}

async function* recordsOf(
  parser: ReturnType<typeof parse>,
  feeding: Promise<void>,
  read: { next: number },
): AsyncGenerator<CsvRecord> {
  try {
    for await (const record of parser as AsyncIterable<CsvRecord>) yield record;
  } catch (error) {
    throw refusalOf(error, read.next);
  } finally {
    if (!parser.destroyed) parser.destroy();
    await feeding;
  }
}

/** csv-parse's refusal in words, at the line where the record it could not read starts. */
function refusalOf(error: unknown, line: number): unknown {
  if (!(error instanceof CsvError)) return error;
  switch (error.code) {
    case 'CSV_QUOTE_NOT_CLOSED':
      return new FileRefusal(
        'unterminated_quote',
        `The file ends inside a quoted cell opened on line ${line}: it looks cut short (a truncated download or copy). Export it again.`,
        line,
      );
    case 'INVALID_OPENING_QUOTE':
    case 'CSV_INVALID_CLOSING_QUOTE':
    case 'CSV_NON_TRIMABLE_CHAR_AFTER_CLOSING_QUOTE':
      return new FileRefusal(
        'malformed_quote',
        `Line ${errorLine(error, line)} has a quote inside a cell that is not itself quoted, or text after a closing quote: a quote inside a cell is written twice ("") in a CSV file.`,
        errorLine(error, line),
      );
    case 'CSV_MAX_RECORD_SIZE':
      return new FileRefusal(
        'row_too_long',
        `The row starting on line ${line} is longer than ${MAX_RECORD_CHARACTERS.toLocaleString('en')} characters: most likely a quote opened there is never closed.`,
        line,
      );
    default:
      return new FileRefusal('malformed_quote', `The file could not be read as CSV near line ${line}.`, line);
  }
}

const errorLine = (error: CsvError, fallback: number) => (typeof error.lines === 'number' ? error.lines : fallback);
