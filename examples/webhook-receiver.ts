// An example webhook receiver for visa-crm-api deliveries.
//
//   WEBHOOK_SECRET=whsec_... PORT=8443 TLS_KEY=key.pem TLS_CERT=cert.pem node --import ./scripts/typescript-resolve.mjs examples/webhook-receiver.ts
//
// During a secret rotation set WEBHOOK_SECRET to "new,old": either secret verifies for the 24 hours both sign.
// Without TLS_KEY/TLS_CERT it listens on plain HTTP (put it behind your HTTPS terminator; endpoints must be HTTPS).
//
// What it shows:
// 1. Verify against the raw body bytes, before any JSON parsing (re-serialised JSON would not match the signature).
// 2. verifyWebhook checks X-Service-Signature: HMAC-SHA256 of "<t>.<body>", either v1 value, constant-time comparison,
//    and refuses a `t` more than 5 minutes away from this machine's clock (keep it NTP-synced).
// 3. Acknowledge fast with any 2xx (within 10 s); do slow work afterwards. Anything else is retried after 1 min, 5 min,
//    30 min, 2 h, 6 h and 24 h, and 50 failures in a row pause the endpoint.
// 4. Drop duplicates by the envelope `id` (the event id): retries and manual resends carry the same id. Keep the seen
//    ids in your database in production; the in-memory set here is only for the example.
//
// The same deliveries also carry Standard Webhooks headers (webhook-id, webhook-timestamp, webhook-signature); a
// Standard Webhooks library verifies them with the same whsec_ secret string:
//   new Webhook(secret).verify(rawBody, { 'webhook-id': ..., 'webhook-timestamp': ..., 'webhook-signature': ... })
import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { verifyWebhook, WebhookVerificationError, type WebhookEnvelope } from '../src/webhooks/verify.js';

const secrets = (process.env.WEBHOOK_SECRET ?? '')
  .split(',')
  .map((s) => s.trim())
  .filter(Boolean);
if (secrets.length === 0) {
  console.error('Set WEBHOOK_SECRET to the endpoint secret (whsec_...), or "new,old" during a rotation');
  process.exit(1);
}
const seen = new Set<string>();

function handle(envelope: WebhookEnvelope): void {
  switch (envelope.event) {
    case 'lead.created':
      console.log(`new lead ${String(envelope.data.id)}: ${String(envelope.data.full_name)}`);
      break;
    case 'application.outcome':
      console.log(`application ${String(envelope.data.id)} outcome: ${String(envelope.data.outcome)}`);
      break;
    default:
      console.log(`${envelope.event} ${envelope.id}`);
  }
}

const onRequest = (req: http.IncomingMessage, res: http.ServerResponse) => {
  if (req.method !== 'POST') return void res.writeHead(405).end();
  const chunks: Buffer[] = [];
  let size = 0;
  req.on('data', (chunk: Buffer) => {
    size += chunk.length;
    if (size > 1_000_000) req.destroy();
    else chunks.push(chunk);
  });
  req.on('end', () => {
    const body = Buffer.concat(chunks);
    let envelope: WebhookEnvelope;
    try {
      envelope = verifyWebhook({ body, signature: req.headers['x-service-signature'], secret: secrets });
    } catch (error) {
      if (error instanceof WebhookVerificationError)
        return void res.writeHead(400, { 'content-type': 'text/plain' }).end(error.message);
      throw error;
    }
    res.writeHead(204).end();
    if (seen.has(envelope.id)) return;
    seen.add(envelope.id);
    setImmediate(() => handle(envelope));
  });
};

const port = Number(process.env.PORT ?? 8443);
const server =
  process.env.TLS_KEY && process.env.TLS_CERT
    ? https.createServer(
        { key: readFileSync(process.env.TLS_KEY), cert: readFileSync(process.env.TLS_CERT) },
        onRequest,
      )
    : http.createServer(onRequest);
server.listen(port, () => console.log(`webhook receiver listening on port ${port}`));
