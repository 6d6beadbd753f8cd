import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Receiver side: verifies a delivery of visa-crm-api webhooks. Depends only on node:crypto, so it can be imported
 * from this package or copied into a receiver as it is. See examples/webhook-receiver.ts.
 */

export const SIGNATURE_TOLERANCE_SECONDS = 300;

export class WebhookVerificationError extends Error {
  override name = 'WebhookVerificationError';
}

export interface WebhookEnvelope {
  id: string;
  event: string;
  tenant_id: string;
  created_at: string;
  data: Record<string, unknown>;
}

export interface VerifyWebhookInput {
  /** The raw request body exactly as received (before any JSON parsing). */
  body: string | Buffer;
  /** The X-Service-Signature header. */
  signature: string | string[] | undefined;
  /** The endpoint secret (`whsec_...`); during a rotation pass the new and the old one, either may match. */
  secret: string | readonly string[];
  /** Seconds of clock difference accepted; 300 (5 minutes) unless told. */
  toleranceSeconds?: number;
  /** The receiver's clock; the current time unless told. */
  now?: Date;
}

function parseHeader(header: string): { timestamp: number; signatures: string[] } {
  let timestamp: number | undefined;
  const signatures: string[] = [];
  for (const part of header.split(',')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    const key = part.slice(0, eq).trim();
    const value = part.slice(eq + 1).trim();
    if (key === 't' && /^\d{1,12}$/.test(value)) timestamp = Number(value);
    else if (key === 'v1' && /^[0-9a-f]{64}$/.test(value)) signatures.push(value);
  }
  if (timestamp === undefined) throw new WebhookVerificationError('The signature header has no timestamp');
  if (signatures.length === 0) throw new WebhookVerificationError('The signature header has no v1 signature');
  return { timestamp, signatures };
}

/**
 * Checks the X-Service-Signature of a delivery and returns the parsed envelope. Throws WebhookVerificationError when
 * the header is missing or malformed, `t` is more than the tolerance away from the clock, or no v1 value matches
 * an HMAC-SHA256 of `<t>.<body>` under any of the secrets (compared in constant time).
 */
export function verifyWebhook(input: VerifyWebhookInput): WebhookEnvelope {
  const header = Array.isArray(input.signature) ? input.signature[0] : input.signature;
  if (!header) throw new WebhookVerificationError('The X-Service-Signature header is missing');
  const { timestamp, signatures } = parseHeader(header);
  const tolerance = input.toleranceSeconds ?? SIGNATURE_TOLERANCE_SECONDS;
  const nowSeconds = Math.floor((input.now ?? new Date()).getTime() / 1000);
  if (Math.abs(nowSeconds - timestamp) > tolerance)
    throw new WebhookVerificationError('The signature timestamp is outside the tolerance');
  const body = typeof input.body === 'string' ? Buffer.from(input.body, 'utf8') : input.body;
  const secrets = typeof input.secret === 'string' ? [input.secret] : input.secret;
  let matched = false;
  for (const secret of secrets) {
    const expected = createHmac('sha256', secret).update(`${timestamp}.`).update(body).digest();
    for (const signature of signatures) {
      // Both are 32 bytes (the header value was checked to be 64 hex digits), as timingSafeEqual needs.
      if (timingSafeEqual(expected, Buffer.from(signature, 'hex'))) matched = true;
    }
  }
  if (!matched) throw new WebhookVerificationError('No signature matches the body and secret');
  let envelope: unknown;
  try {
    envelope = JSON.parse(body.toString('utf8'));
  } catch {
    throw new WebhookVerificationError('The body is not JSON');
  }
  return envelope as WebhookEnvelope;
}
