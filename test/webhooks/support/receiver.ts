import { createHmac } from 'node:crypto';
import https from 'node:https';
import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TestPki } from './tls.js';

export interface ReceivedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  receivedAt: number;
  /** The sender's port: with `ss -tnp`, which process sent it. */
  remotePort: number;
}

/** What the receiver does with a request: answer (after a delay), or hold it open without answering. */
export type Reply = { status: number; headers?: Record<string, string>; body?: string; delayMs?: number } | 'hang';

/** A real HTTPS server on loopback with the test CA's certificate, recording every request. */
export class TestReceiver {
  readonly requests: ReceivedRequest[] = [];
  reply: (request: ReceivedRequest, index: number) => Reply = () => ({ status: 200, body: 'ok' });
  private readonly hanging = new Set<ServerResponse>();
  private server!: https.Server;
  port = 0;

  static async start(pki: TestPki): Promise<TestReceiver> {
    const receiver = new TestReceiver();
    receiver.server = https.createServer({ key: pki.key, cert: pki.cert, keepAliveTimeout: 30_000 }, (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const received: ReceivedRequest = {
          method: req.method ?? '',
          path: req.url ?? '',
          headers: req.headers,
          body: Buffer.concat(chunks).toString('utf8'),
          receivedAt: Date.now(),
          remotePort: req.socket.remotePort ?? 0,
        };
        const index = receiver.requests.push(received) - 1;
        const reply = receiver.reply(received, index);
        if (reply === 'hang') {
          receiver.hanging.add(res);
          return;
        }
        const send = () =>
          res.writeHead(reply.status, { 'content-type': 'text/plain', ...reply.headers }).end(reply.body ?? '');
        if (reply.delayMs) setTimeout(send, reply.delayMs);
        else send();
      });
    });
    await new Promise<void>((resolve) => receiver.server.listen(0, '127.0.0.1', resolve));
    receiver.port = (receiver.server.address() as AddressInfo).port;
    return receiver;
  }

  url(host = '127.0.0.1', path = '/hooks'): string {
    return `https://${host}:${this.port}${path}`;
  }

  /** Requests carrying this event id (the envelope id). */
  forEvent(eventId: string): ReceivedRequest[] {
    return this.requests.filter((r) => r.headers['webhook-id'] === eventId);
  }

  async close(): Promise<void> {
    for (const res of this.hanging) res.destroy();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** Polls until `check` returns a truthy value, failing after `timeoutMs` with the message. */
export async function waitFor<T>(
  check: () => T | Promise<T>,
  message: string,
  timeoutMs = 15_000,
): Promise<Exclude<T, undefined | null | false | 0 | ''>> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value as Exclude<T, undefined | null | false | 0 | ''>;
    if (Date.now() > until) throw new Error(`Timed out waiting: ${message}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** HMAC-SHA256 of `text` under `secret`, in hex: what a v1 signature holds. */
export const hmacHex = (secret: string, text: string): string =>
  createHmac('sha256', secret).update(text).digest('hex');

/** The parts of a delivery's X-Service-Signature (`t=<unix seconds>,v1=<hex>[,v1=<hex>]`); throws on any other form. */
export function signatureParts(request: ReceivedRequest): { t: string; v1: string[] } {
  const header = String(request.headers['x-service-signature']);
  if (!/^t=\d+(,v1=[0-9a-f]{64})+$/.test(header))
    throw new Error(`X-Service-Signature ${header} does not have the form t=...,v1=...`);
  const parts = header.split(',');
  return { t: parts[0]!.slice(2), v1: parts.slice(1).map((p) => p.slice(3)) };
}
