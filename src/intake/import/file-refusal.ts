/** Why an uploaded CSV file as a whole cannot be read, in words that say what and where. */
export type FileRefusalCode =
  | 'not_utf8'
  | 'utf16'
  | 'unterminated_quote'
  | 'malformed_quote'
  | 'row_too_long'
  | 'no_header'
  | 'no_rows'
  | 'too_many_rows'
  | 'too_large';

export class FileRefusal extends Error {
  readonly code: FileRefusalCode;
  /** The line of the file the problem is on, when there is one. */
  readonly line: number | null;
  constructor(code: FileRefusalCode, message: string, line: number | null = null) {
    super(message);
    this.code = code;
    this.line = line;
    this.name = 'FileRefusal';
  }
}
