import https from 'node:https';
import net, { type LookupFunction } from 'node:net';
import { checkWebhookTarget, RefusedAddressError, type CheckedTarget, type Resolver } from './address-guard.js';

export const DELIVERY_TIMEOUT_MS = 10_000;
export const MAX_LOGGED_RESPONSE_BYTES = 4096;

export interface DeliveryClientOptions {
  allowLoopback: boolean;
  resolve: Resolver;
  /** Extra certificate authorities to trust instead of the system's; tests pass their own CA here. */
  ca?: string | Buffer | (string | Buffer)[];
  timeoutMs?: number;
  maxResponseBytes?: number;
  /** Open connections kept per target address. */
  maxSocketsPerTarget?: number;
}

export interface DeliveryResult {
  /** A 2xx answer arrived within the timeout. */
  ok: boolean;
  status: number | null;
  headers: Record<string, string | string[]> | null;
  /** The first bytes of the answer's body (bounded). */
  body: string | null;
  durationMs: number;
  error: string | null;
  /** The address connected to (or refused). */
  address: string | null;
}

const AGENT_CACHE_LIMIT = 500;

/**
 * POSTs webhook deliveries over HTTPS. Every request checks the URL's addresses again (so a name that now resolves
 * inside is refused) and connects only to the address it checked: the socket's `lookup` answers with that address
 * and nothing else, so a second DNS answer cannot redirect the connection. Redirects are never followed.
 */
export class DeliveryClient {
  private readonly agents = new Map<string, https.Agent>();
  private readonly timeoutMs: number;
  private readonly maxResponseBytes: number;

  private readonly options: DeliveryClientOptions;
  constructor(options: DeliveryClientOptions) {
    this.options = options;
    this.timeoutMs = options.timeoutMs ?? DELIVERY_TIMEOUT_MS;
    this.maxResponseBytes = options.maxResponseBytes ?? MAX_LOGGED_RESPONSE_BYTES;
  }

  async post(url: string, headers: Record<string, string>, body: string): Promise<DeliveryResult> {
    const started = performance.now();
    let target: CheckedTarget;
    try {
      target = await checkWebhookTarget(url, {
        allowLoopback: this.options.allowLoopback,
        resolve: this.options.resolve,
      });
    } catch (error) {
      const reason = error instanceof RefusedAddressError ? error.message : String(error);
      return {
        ok: false,
        status: null,
        headers: null,
        body: null,
        durationMs: Math.round(performance.now() - started),
        error: `refused: the URL ${reason}`,
        address: null,
      };
    }
    return this.send(target, headers, body, started);
  }

  private agentFor(target: CheckedTarget): https.Agent {
    const key = `${target.hostname}|${target.port}|${target.address}`;
    let agent = this.agents.get(key);
    if (!agent) {
      if (this.agents.size >= AGENT_CACHE_LIMIT) {
        const [oldestKey, oldest] = this.agents.entries().next().value as [string, https.Agent];
        oldest.destroy();
        this.agents.delete(oldestKey);
      }
      agent = new https.Agent({
        keepAlive: true,
        maxSockets: this.options.maxSocketsPerTarget ?? 64,
        ca: this.options.ca,
      });
      this.agents.set(key, agent);
    }
    return agent;
  }

  private send(
    target: CheckedTarget,
    headers: Record<string, string>,
    body: string,
    started: number,
  ): Promise<DeliveryResult> {
    const payload = Buffer.from(body, 'utf8');
    return new Promise<DeliveryResult>((resolve) => {
      const answer: Answer = { status: null, headers: null, chunks: [], kept: 0 };
      let settled = false;
      const finish = (error: string | null) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(deliveryResult(answer, error, started, target.address));
      };
      const request = https.request(this.requestOptions(target, headers, payload));
      const timer = setTimeout(() => {
        // A 2xx status that arrived in time acknowledges even if the body is still streaming.
        finish(answer.status === null ? `no answer within ${this.timeoutMs / 1000} s` : null);
        request.destroy();
      }, this.timeoutMs);
      request.on('response', (response) => {
        answer.status = response.statusCode ?? null;
        answer.headers = { ...response.headers } as Record<string, string | string[]>;
        response.on('data', (chunk: Buffer) => keepChunk(answer, chunk, this.maxResponseBytes));
        response.on('end', () => finish(null));
        response.on('error', () => finish(null));
      });
      request.on('error', (error: NodeJS.ErrnoException) =>
        finish(answer.status === null ? (error.code ? `${error.code}: ${error.message}` : error.message) : null),
      );
      request.end(payload);
    });
  }

  /** A POST to the checked address only, through the target's kept-alive agent. */
  private requestOptions(
    target: CheckedTarget,
    headers: Record<string, string>,
    payload: Buffer,
  ): https.RequestOptions {
    return {
      host: target.hostname,
      // SNI carries names only; an IP-literal URL is checked against the certificate's IP entries.
      ...(net.isIP(target.hostname) ? {} : { servername: target.hostname }),
      port: target.port,
      path: `${target.url.pathname}${target.url.search}`,
      method: 'POST',
      headers: { ...headers, 'content-length': String(payload.length) },
      agent: this.agentFor(target),
      lookup: pinnedLookup(target.address, target.family),
      ca: this.options.ca,
    };
  }

  close(): void {
    for (const agent of this.agents.values()) agent.destroy();
    this.agents.clear();
  }
}

/** A socket lookup that answers with the checked address only, whatever the name resolves to by now. */
function pinnedLookup(address: string, family: 4 | 6): LookupFunction {
  return ((_hostname: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    if (options?.all) callback(null, [{ address, family }]);
    else callback(null, address, family);
  }) as unknown as LookupFunction;
}

/** An answer as it arrives: its status and headers, and the first bytes of its body. */
interface Answer {
  status: number | null;
  headers: Record<string, string | string[]> | null;
  chunks: Buffer[];
  kept: number;
}

/** Keeps the part of a body chunk that fits within the logged bytes. */
function keepChunk(answer: Answer, chunk: Buffer, limit: number): void {
  if (answer.kept >= limit) return;
  const part = chunk.subarray(0, limit - answer.kept);
  answer.chunks.push(part);
  answer.kept += part.length;
}

function deliveryResult(answer: Answer, error: string | null, started: number, address: string): DeliveryResult {
  const { status } = answer;
  return {
    ok: status !== null && status >= 200 && status < 300,
    status,
    headers: answer.headers,
    body: status === null ? null : Buffer.concat(answer.chunks).toString('utf8'),
    durationMs: Math.round(performance.now() - started),
    error: error ?? statusError(status, answer.headers),
    address,
  };
}

/** Why an answer that arrived does not acknowledge: a redirect (never followed) or a status outside 2xx. */
function statusError(status: number | null, headers: Record<string, string | string[]> | null): string | null {
  if (status === null) return null;
  if (status >= 300 && status < 400) {
    const location = headers?.location;
    return `redirect${location ? ` to ${String(location)}` : ''} not followed`;
  }
  return status < 200 || status >= 300 ? `answered ${status}` : null;
}
