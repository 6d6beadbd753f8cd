import type { LeadCreateBody } from '../domain/leads/submission.js';

const LINK = /(https?:\/\/|www\.)/i;
const LINKS = /(https?:\/\/|www\.)/gi;
/** More links than this in the message reads as link spam, not an enquiry. */
export const MAX_MESSAGE_LINKS = 3;

/**
 * Why a submission is spam, or undefined. Rules (docs/decisions.md): the honeypot `website` is filled in; the name
 * holds a link; the message holds more than three links. Applied to every key, live or test.
 */
export function spamReason(body: Pick<LeadCreateBody, 'website' | 'full_name' | 'message'>): string | undefined {
  if (typeof body.website === 'string' && body.website.trim() !== '') return 'honeypot';
  if (typeof body.full_name === 'string' && LINK.test(body.full_name)) return 'link_in_name';
  if (typeof body.message === 'string' && (body.message.match(LINKS)?.length ?? 0) > MAX_MESSAGE_LINKS)
    return 'links_in_message';
  return undefined;
}
