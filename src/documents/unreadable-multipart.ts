/**
 * busboy's (through @fastify/multipart) refusals of a body it cannot read: no boundary in the content type, or a
 * boundary that never comes (mis-said, or the body cut short). They are plain errors without a code or status, so
 * only their words tell them from a failure of ours; each door answers them as the sender's mistake (400).
 */
const UNREADABLE = /^Multipart: Boundary not found$|unexpected end of (multipart data|form)$/i;

export function isUnreadableMultipart(error: unknown): boolean {
  return error instanceof Error && UNREADABLE.test(error.message);
}
