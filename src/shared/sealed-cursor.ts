import type { SecretBox } from './secret-box.js';

/** A uuid without its dashes, as cursors carry it. */
export const compactId = (id: string) => id.replaceAll('-', '');

/** A cursor's text sealed with AES-GCM under the list-cursor key, in URL-safe base64 without its version or padding. */
export function sealCursor(box: SecretBox, plain: string): string {
  return box.listCursors.seal(plain).slice(3).replaceAll('+', '-').replaceAll('/', '_').replace(/=+$/, '');
}

/** The text a cursor sealed by `sealCursor` holds, or undefined for anything else (changed, foreign, malformed). */
export function openCursor(box: SecretBox, cursor: string): string | undefined {
  if (!/^[A-Za-z0-9_-]+$/.test(cursor)) return undefined;
  try {
    return box.listCursors.open(`v2:${cursor.replaceAll('-', '+').replaceAll('_', '/')}`);
  } catch {
    return undefined;
  }
}
