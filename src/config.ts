import path from 'node:path';
import ipaddr from 'ipaddr.js';
import { parseClamdAddress } from './documents/clamd.js';

/** Everything the service reads from its environment, parsed once. See the README's configuration table. */
/** A setting missing or wrong, found after the configuration was read; its message names the setting and the fix. */
export class SettingError extends Error {
  override name = 'SettingError';
}

export interface Config {
  host: string;
  port: number;
  databaseUrl: string | undefined;
  /**
   * The PostgreSQL server itself when DATABASE_URL names a transaction pooler (DATABASE_DIRECT_URL): what needs a
   * session of its own connects here (the migrations' lock, LISTEN). Unset: DATABASE_URL.
   */
  databaseDirectUrl: string | undefined;
  dataDir: string;
  redisUrl: string | undefined;
  logLevel: string;
  /**
   * Which hops in front of the service to believe about the client's address (TRUST_PROXY): none (false), the
   * nearest `n` (a hop count), or those at these addresses or ranges; never every hop. See docs/decisions.md.
   */
  trustProxy: false | number | string[];
  bodyLimitBytes: number;
  /** A CSV import's limits (file size and rows); unset, the stated ones (src/intake/import/store.ts). Tests lower them. */
  csvImportLimits?: { maxBytes: number; maxRows: number };
  /** 32-byte key (base64) that encrypts webhook secrets at rest; generated into the data folder when unset on the embedded default. */
  secretEncryptionKey: string | undefined;
  /** Test-only switch: lets webhook deliveries reach loopback receivers. Refused when NODE_ENV=production. */
  webhookAllowLoopback: boolean;
  /** Token for the admin (workspace UI) HTTP interface; the admin routes are off when unset. */
  adminToken: string | undefined;
  /**
   * The address integrators reach the service at (PUBLIC_BASE_URL), without a trailing slash: the `servers` entry of
   * the OpenAPI documents. Unset: where the service listens (HOST and PORT). See docs/decisions.md.
   */
  publicBaseUrl: string;
  captchaVerifyUrls: { turnstile: string; hcaptcha: string; recaptcha: string };
  /** Run the webhook fan-out subscriber and delivery worker in this process. */
  runWorkers: boolean;
  /** Serve the development demo page for the embeddable form. */
  serveDemo: boolean;
  /**
   * Failed authentications allowed per client address (IPv4 address or IPv6 /64): a token bucket of `capacity`
   * refilled at `refill_per_second`; past it, requests needing a key lookup answer 429. See docs/decisions.md.
   */
  authFailureLimit: { capacity: number; refill_per_second: number };
  /** Bearer token for `GET /metrics` (METRICS_TOKEN); the route does not exist when unset. See docs/decisions.md. */
  metricsToken: string | undefined;
  /** Fan-out lag (seconds) past which a warning names the blocking backend (FANOUT_LAG_WARN_SECONDS). */
  fanOutLagWarnSeconds: number;
  /** Load shedding (see docs/decisions.md): how long a request waits for a database connection before 503. */
  poolAcquireTimeoutMs: number;
  /** Requests waiting for a database connection past which new ones answer 503 at once. */
  maxPoolWaiting: number;
  /** Mean event-loop delay (ms, over a second) past which new requests answer 503; 0 (the default) checks none. */
  maxEventLoopDelayMs: number;
  /**
   * Where owner notices are mailed (SMTP_URL, smtp:// or smtps://, credentials in the URL); unset: notices are kept
   * in webhook_notifications and logged at warn level, not sent. See docs/decisions.md.
   */
  smtpUrl: string | undefined;
  /** The From address of owner notices (SMTP_FROM). */
  smtpFrom: string;
  /**
   * Where the ClamAV daemon listens (CLAMD_ADDRESS: unix:/path or tcp://host:port); Debian's clamav-daemon socket by
   * default. Every uploaded document is scanned there before it is accepted.
   */
  clamdAddress: string;
}

function bool(value: string | undefined, fallback: boolean): boolean {
  if (value === undefined || value === '') return fallback;
  return ['1', 'true', 'yes', 'on'].includes(value.toLowerCase());
}

/** proxy-addr's names for ranges, which fastify's `trustProxy` accepts beside addresses and CIDR ranges. */
const PROXY_RANGE_NAMES = ['loopback', 'linklocal', 'uniquelocal'];

/** An IPv4 address in four decimal parts (not "1.5", which inet_aton would read as 1.0.0.5) or an IPv6 address. */
function plainAddress(text: string): boolean {
  return ipaddr.IPv4.isValidFourPartDecimal(text) || ipaddr.IPv6.isValid(text);
}

function proxyAddress(entry: string): boolean {
  if (PROXY_RANGE_NAMES.includes(entry) || plainAddress(entry)) return true;
  const [address, bits, ...rest] = entry.split('/');
  if (rest.length > 0 || !address || !bits || !/^\d+$/.test(bits) || !plainAddress(address)) return false;
  return Number(bits) <= (address.includes(':') ? 128 : 32);
}

/** TRUST_PROXY: a hop count or a list of the proxies' addresses; "true" (every hop) is refused. */
function trustProxy(value: string | undefined): false | number | string[] {
  const text = (value ?? '').trim();
  if (text === '' || text.toLowerCase() === 'false') return false;
  if (text.toLowerCase() === 'true')
    throw new Error(
      'TRUST_PROXY=true is refused: it believes every X-Forwarded-For entry, which the client writes, so any client ' +
        "could pass a key's IP allow-list and use up another address's failed authentications; set the number of " +
        'proxies in front of the service (TRUST_PROXY=1 behind one load balancer) or their addresses ' +
        '(TRUST_PROXY=10.0.0.5,10.0.1.0/24)',
    );
  if (/^\d+$/.test(text)) return Number(text) === 0 ? false : Number(text);
  const entries = text.split(',').map((entry) => entry.trim());
  const wrong = entries.find((entry) => !proxyAddress(entry));
  if (wrong !== undefined)
    throw new Error(
      `TRUST_PROXY must be the number of proxies in front of the service or a comma-separated list of their ` +
        `addresses or CIDR ranges; "${wrong}" is neither`,
    );
  return entries;
}

/** Operator tokens are compared whole, and wrong ones are throttled per address, but a short one could be guessed. */
const MIN_TOKEN_LENGTH = 32;

/** ADMIN_TOKEN or METRICS_TOKEN: unset, or 32 characters and more with no white space. The value is never repeated. */
function operatorToken(name: string, value: string | undefined): string | undefined {
  if (value === undefined || value === '') return undefined;
  if (value.length < MIN_TOKEN_LENGTH)
    throw new Error(
      `${name} must be at least ${MIN_TOKEN_LENGTH} characters long: a shorter token could be guessed by someone ` +
        'trying from many addresses; generate one with `openssl rand -base64 32`',
    );
  if (/\s/.test(value))
    throw new Error(`${name} must not contain white space: it is sent as \`Authorization: Bearer <token>\``);
  return value;
}

function int(name: string, value: string | undefined, fallback: number): number {
  if (value === undefined || value === '') return fallback;
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < 0)
    throw new Error(`${name} must be a non-negative integer, got "${value}"`);
  return parsed;
}

/** `http://host:port` for a listening address; a wildcard host (listen everywhere) names no one address: localhost. */
function listeningUrl(host: string, port: number): string {
  const named = ['', '0.0.0.0', '::', '[::]'].includes(host) ? 'localhost' : host;
  return `http://${named.includes(':') && !named.startsWith('[') ? `[${named}]` : named}:${port}`;
}

/** An absolute http(s) URL without credentials, query or fragment; a trailing slash is dropped (paths start with one). */
function baseUrl(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    // The value is not repeated: a mistyped URL may hold credentials.
    throw new Error('PUBLIC_BASE_URL must be an absolute http or https URL');
  }
  if (!['http:', 'https:'].includes(url.protocol) || url.username || url.password || url.search || url.hash)
    throw new Error('PUBLIC_BASE_URL must be an http or https URL without credentials, query or fragment');
  return `${url.origin}${url.pathname}`.replace(/\/+$/, '');
}

/** An smtp:// or smtps:// URL; the value is never repeated in the error, since it may hold a password. */
function clamdAddress(value: string): string {
  parseClamdAddress(value); // refuses a malformed address at start rather than at the first upload
  return value;
}

function smtpUrl(value: string | undefined): string | undefined {
  if (value === undefined || value === '') return undefined;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new Error('SMTP_URL must be an smtp:// or smtps:// URL (smtp://user:password@host:587)');
  }
  if (!['smtp:', 'smtps:'].includes(url.protocol) || !url.hostname)
    throw new Error('SMTP_URL must be an smtp:// or smtps:// URL (smtp://user:password@host:587)');
  return value;
}

/** DATABASE_DIRECT_URL names the server behind DATABASE_URL's pooler; alone it would name nothing the service uses. */
function databaseDirectUrl(env: NodeJS.ProcessEnv): string | undefined {
  if (!env.DATABASE_DIRECT_URL) return env.DATABASE_URL || undefined;
  if (!env.DATABASE_URL)
    throw new Error(
      'DATABASE_DIRECT_URL is set without DATABASE_URL: it names the PostgreSQL server behind the pooler DATABASE_URL names',
    );
  return env.DATABASE_DIRECT_URL;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const production = env.NODE_ENV === 'production';
  const webhookAllowLoopback = bool(env.WEBHOOK_ALLOW_LOOPBACK, false);
  if (production && webhookAllowLoopback) {
    throw new Error('WEBHOOK_ALLOW_LOOPBACK is a test-only switch and cannot be set when NODE_ENV=production');
  }
  const host = env.HOST ?? '127.0.0.1';
  const port = int('PORT', env.PORT, 3000);
  return {
    host,
    port,
    databaseUrl: env.DATABASE_URL || undefined,
    databaseDirectUrl: databaseDirectUrl(env),
    dataDir: path.resolve(env.DATA_DIR ?? './data'),
    redisUrl: env.REDIS_URL || undefined,
    logLevel: env.LOG_LEVEL ?? 'info',
    trustProxy: trustProxy(env.TRUST_PROXY),
    bodyLimitBytes: int('BODY_LIMIT_BYTES', env.BODY_LIMIT_BYTES, 65536),
    secretEncryptionKey: env.SECRET_ENCRYPTION_KEY || undefined,
    webhookAllowLoopback,
    adminToken: operatorToken('ADMIN_TOKEN', env.ADMIN_TOKEN),
    publicBaseUrl: env.PUBLIC_BASE_URL ? baseUrl(env.PUBLIC_BASE_URL) : listeningUrl(host, port),
    captchaVerifyUrls: {
      turnstile: env.CAPTCHA_TURNSTILE_VERIFY_URL ?? 'https://challenges.cloudflare.com/turnstile/v0/siteverify',
      hcaptcha: env.CAPTCHA_HCAPTCHA_VERIFY_URL ?? 'https://api.hcaptcha.com/siteverify',
      recaptcha: env.CAPTCHA_RECAPTCHA_VERIFY_URL ?? 'https://www.google.com/recaptcha/api/siteverify',
    },
    runWorkers: bool(env.RUN_WORKERS, true),
    serveDemo: bool(env.SERVE_DEMO, !production),
    authFailureLimit: {
      capacity: Math.max(1, int('AUTH_FAILURE_BURST', env.AUTH_FAILURE_BURST, 30)),
      refill_per_second: Math.max(1, int('AUTH_FAILURES_PER_MINUTE', env.AUTH_FAILURES_PER_MINUTE, 30)) / 60,
    },
    metricsToken: operatorToken('METRICS_TOKEN', env.METRICS_TOKEN),
    fanOutLagWarnSeconds: int('FANOUT_LAG_WARN_SECONDS', env.FANOUT_LAG_WARN_SECONDS, 30),
    poolAcquireTimeoutMs: Math.max(1, int('DB_POOL_ACQUIRE_TIMEOUT_MS', env.DB_POOL_ACQUIRE_TIMEOUT_MS, 5000)),
    maxPoolWaiting: Math.max(1, int('MAX_POOL_WAITING', env.MAX_POOL_WAITING, 200)),
    maxEventLoopDelayMs: int('MAX_EVENT_LOOP_DELAY_MS', env.MAX_EVENT_LOOP_DELAY_MS, 0),
    smtpUrl: smtpUrl(env.SMTP_URL),
    smtpFrom: env.SMTP_FROM || 'visa-crm <no-reply@localhost>',
    clamdAddress: clamdAddress(env.CLAMD_ADDRESS || 'unix:/run/clamav/clamd.ctl'),
  };
}
