import path from 'node:path';

/** Everything the service reads from its environment, parsed once. See the README's configuration table. */
export interface Config {
  host: string;
  port: number;
  databaseUrl: string | undefined;
  dataDir: string;
  redisUrl: string | undefined;
  logLevel: string;
  trustProxy: boolean | string;
  bodyLimitBytes: number;
  /** 32-byte key (base64) that encrypts webhook secrets at rest; generated into the data folder when unset on the embedded default. */
  secretEncryptionKey: string | undefined;
  /** Test-only switch: lets webhook deliveries reach loopback receivers. Refused when NODE_ENV=production. */
  webhookAllowLoopback: boolean;
  /** Token for the admin (workspace UI) HTTP interface; the admin routes are off when unset. */
  adminToken: string | undefined;
  captchaVerifyUrls: { turnstile: string; hcaptcha: string; recaptcha: string };
  /** Run the webhook fan-out subscriber and delivery worker in this process. */
  runWorkers: boolean;
  /** Serve the development demo page for the embeddable form. */
  serveDemo: boolean;
}

function bool(value: string | undefined, fallback: boolean): boolean {
  if (value === undefined || value === '') return fallback;
  return ['1', 'true', 'yes', 'on'].includes(value.toLowerCase());
}

function int(name: string, value: string | undefined, fallback: number): number {
  if (value === undefined || value === '') return fallback;
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < 0) throw new Error(`${name} must be a non-negative integer, got "${value}"`);
  return parsed;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const production = env.NODE_ENV === 'production';
  const webhookAllowLoopback = bool(env.WEBHOOK_ALLOW_LOOPBACK, false);
  if (production && webhookAllowLoopback) {
    throw new Error('WEBHOOK_ALLOW_LOOPBACK is a test-only switch and cannot be set when NODE_ENV=production');
  }
  const trustProxyRaw = env.TRUST_PROXY;
  return {
    host: env.HOST ?? '127.0.0.1',
    port: int('PORT', env.PORT, 3000),
    databaseUrl: env.DATABASE_URL || undefined,
    dataDir: path.resolve(env.DATA_DIR ?? './data'),
    redisUrl: env.REDIS_URL || undefined,
    logLevel: env.LOG_LEVEL ?? 'info',
    trustProxy: trustProxyRaw === undefined || trustProxyRaw === '' ? false : ['true', 'false'].includes(trustProxyRaw) ? trustProxyRaw === 'true' : trustProxyRaw,
    bodyLimitBytes: int('BODY_LIMIT_BYTES', env.BODY_LIMIT_BYTES, 65536),
    secretEncryptionKey: env.SECRET_ENCRYPTION_KEY || undefined,
    webhookAllowLoopback,
    adminToken: env.ADMIN_TOKEN || undefined,
    captchaVerifyUrls: {
      turnstile: env.CAPTCHA_TURNSTILE_VERIFY_URL ?? 'https://challenges.cloudflare.com/turnstile/v0/siteverify',
      hcaptcha: env.CAPTCHA_HCAPTCHA_VERIFY_URL ?? 'https://api.hcaptcha.com/siteverify',
      recaptcha: env.CAPTCHA_RECAPTCHA_VERIFY_URL ?? 'https://www.google.com/recaptcha/api/siteverify',
    },
    runWorkers: bool(env.RUN_WORKERS, true),
    serveDemo: bool(env.SERVE_DEMO, !production),
  };
}
