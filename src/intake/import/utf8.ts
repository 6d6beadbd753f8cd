import { FileRefusal } from './file-refusal.js';

const RESAVE =
  'Save it again as "CSV UTF-8" (Excel: File › Save As › CSV UTF-8; Google Sheets and Numbers export UTF-8).';

/** Where the first byte that is not well-formed UTF-8 is in `bytes`, from `start`; -1 if every sequence is whole. */
export function firstInvalidUtf8(bytes: Uint8Array, start = 0): number {
  let i = start;
  while (i < bytes.length) {
    const b = bytes[i]!;
    if (b < 0x80) {
      i += 1;
      continue;
    }
    const [length, low, high] =
      b >= 0xc2 && b <= 0xdf
        ? [2, 0x80, 0xbf]
        : b === 0xe0
          ? [3, 0xa0, 0xbf]
          : b === 0xed
            ? [3, 0x80, 0x9f]
            : b >= 0xe1 && b <= 0xef
              ? [3, 0x80, 0xbf]
              : b === 0xf0
                ? [4, 0x90, 0xbf]
                : b === 0xf4
                  ? [4, 0x80, 0x8f]
                  : b >= 0xf1 && b <= 0xf3
                    ? [4, 0x80, 0xbf]
                    : [0, 0, 0];
    if (length === 0) return i;
    if (i + length > bytes.length) return -1; // cut by the chunk's end: the next chunk decides
    const second = bytes[i + 1]!;
    if (second < low || second > high) return i;
    for (let k = 2; k < length; k += 1) if ((bytes[i + k]! & 0xc0) !== 0x80) return i;
    i += length;
  }
  return -1;
}

const countNewlines = (bytes: Uint8Array, end: number) => {
  let n = 0;
  for (let i = 0; i < end; i += 1) if (bytes[i] === 0x0a) n += 1;
  return n;
};

/**
 * Decodes a file's bytes as UTF-8 chunk by chunk (a UTF-8 byte-order mark is dropped), refusing a file in another
 * encoding with the line of its first foreign byte and the encoding it looks like: UTF-16 (a byte-order mark, or NUL
 * bytes between letters) or Windows-1252, the single-byte encoding Excel on Windows saves "CSV" in.
 */
export class Utf8Decoder {
  private readonly decoder = new TextDecoder('utf-8', { fatal: true });
  private newlinesBefore = 0;
  private first = true;

  decode(chunk: Uint8Array): string {
    if (this.first) {
      this.first = false;
      this.refuseUtf16(chunk);
    }
    try {
      const text = this.decoder.decode(chunk, { stream: true });
      this.newlinesBefore += countNewlines(chunk, chunk.length);
      return text;
    } catch {
      throw this.notUtf8(chunk);
    }
  }

  end(): string {
    try {
      return this.decoder.decode();
    } catch {
      throw new FileRefusal(
        'not_utf8',
        `The file ends in the middle of a character: it is not UTF-8 text, or it was cut short. ${RESAVE}`,
        this.newlinesBefore + 1,
      );
    }
  }

  private refuseUtf16(chunk: Uint8Array): void {
    if (chunk[0] === 0x50 && chunk[1] === 0x4b && chunk[2] === 0x03 && chunk[3] === 0x04)
      throw new FileRefusal('not_utf8', `The file is a workbook (.xlsx, a ZIP archive), not a CSV file. ${RESAVE}`, 1);
    const bom16 = (chunk[0] === 0xff && chunk[1] === 0xfe) || (chunk[0] === 0xfe && chunk[1] === 0xff);
    // UTF-16 text of Latin letters has a NUL in every other byte, the same half each time.
    const head = chunk.subarray(0, 512);
    let even = 0;
    let odd = 0;
    head.forEach((b, i) => {
      if (b !== 0) return;
      if (i % 2 === 0) even += 1;
      else odd += 1;
    });
    const half = head.length / 2;
    const alternating = Math.max(even, odd) >= half * 0.4 && Math.min(even, odd) <= half * 0.05;
    if (bom16 || alternating)
      throw new FileRefusal(
        'utf16',
        `The file is in UTF-16 (Excel's "Unicode text"), not UTF-8, so it cannot be read. ${RESAVE}`,
        1,
      );
    if (even + odd > 0)
      throw new FileRefusal(
        'not_utf8',
        `The file holds NUL bytes on line ${countNewlines(chunk, chunk.indexOf(0)) + 1}: it is not a text file (CSV). ${RESAVE}`,
        countNewlines(chunk, chunk.indexOf(0)) + 1,
      );
  }

  private notUtf8(chunk: Uint8Array): FileRefusal {
    // Skip the tail of a character begun in the previous chunk.
    let start = 0;
    while (start < 3 && start < chunk.length && (chunk[start]! & 0xc0) === 0x80) start += 1;
    const at = firstInvalidUtf8(chunk, start);
    const line = this.newlinesBefore + countNewlines(chunk, at < 0 ? start : at) + 1;
    const byte = at < 0 ? null : chunk[at]!;
    const looks =
      byte !== null && byte >= 0x80
        ? `it looks like Windows-1252 (or another single-byte encoding such as ISO-8859-1): byte 0x${byte.toString(16).toUpperCase()} is ${JSON.stringify(windows1252(byte))} there`
        : 'it is in another encoding';
    return new FileRefusal('not_utf8', `The file is not UTF-8 text: on line ${line} ${looks}. ${RESAVE}`, line);
  }
}

const decoder1252 = new TextDecoder('windows-1252');
const windows1252 = (byte: number) => decoder1252.decode(new Uint8Array([byte]));
