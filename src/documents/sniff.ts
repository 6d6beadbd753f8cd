import type { DocumentContentType } from '../domain/documents/index.js';

/** The bytes each accepted content type starts with (its magic number); a file's name and declared type do not count. */
const SIGNATURES: { type: DocumentContentType; bytes: number[] }[] = [
  { type: 'application/pdf', bytes: [0x25, 0x50, 0x44, 0x46, 0x2d] }, // %PDF-
  { type: 'image/png', bytes: [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a] },
  { type: 'image/jpeg', bytes: [0xff, 0xd8, 0xff] },
];

/** How many first bytes detectContentType needs. */
export const SNIFF_BYTES = 8;

/** The accepted content type the first bytes show, or null. */
export function detectContentType(head: Uint8Array): DocumentContentType | null {
  for (const { type, bytes } of SIGNATURES) if (bytes.every((b, i) => head[i] === b)) return type;
  return null;
}
