import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import type { Test } from 'tap';
import { createServices } from '../../src/bootstrap.js';
import { loadConfig, type Config } from '../../src/config.js';
import { buildApp, type BuildOptions } from '../../src/http/app.js';
import type { AppServices } from '../../src/bootstrap.js';
import type { TypedApp } from '../../src/http/typed-app.js';
import { createKey } from '../../src/keys/repository.js';
import { ensureAccount } from '../../src/identity/accounts.js';
import { createAccessToken } from '../../src/identity/access-tokens.js';
import type { Scope } from '../../src/shared/enums.js';
import { validateDefinition, type WorkspaceDefinition } from '../../src/workspaces/definition.js';
import { applyDefinition } from '../../src/workspaces/repository.js';
import type { Workspace } from '../../src/workspaces/workspace.js';
import { freshDatabase } from './db.js';
import { SCOPES } from '../../src/shared/enums.js';

export const TEST_ENCRYPTION_KEY = Buffer.alloc(32, 7).toString('base64');

/** A clock the test moves by hand. */
export class TestClock {
  public current;
  constructor(current = new Date('2026-11-01T10:00:00.000Z')) {
    this.current = current;
  }
  now = (): Date => new Date(this.current.getTime());
  advance(ms: number): void {
    this.current = new Date(this.current.getTime() + ms);
  }
}

export interface TestApp {
  app: TypedApp;
  services: AppServices;
  pool: pg.Pool;
  baseUrl: string;
  /** fetch against the app over real HTTP on loopback. */
  request(path: string, init?: RequestInit & { json?: unknown; key?: string }): Promise<Response>;
}

/** Starts the real app on a fresh database, listening on 127.0.0.1 with an ephemeral port. */
export async function startApp(
  t: Test,
  options: {
    config?: Partial<Config>;
    now?: () => Date;
    /** Logger options for the app (loggerOptions with a capturing stream); no logging by default. */
    logger?: BuildOptions['logger'];
    /** Runs after the app is built and before it listens, for example to add a route a test needs. */
    beforeListen?: (app: TypedApp, services: AppServices) => Promise<void> | void;
    /** A migrated database of the test's own (on a server it starts and stops), instead of a fresh one. */
    database?: { pool: pg.Pool; url: string };
  } = {},
): Promise<TestApp> {
  const { pool, url } = options.database ?? (await freshDatabase(t));
  // Each app keeps its documents in a folder of its own, and reaches no clamd unless the test starts one
  // (test/support/clamd.ts): uploads then wait for the scanner, as they do when it is down.
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'vcrm-app-data-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const config: Config = {
    // The operator tokens go through the start-up checks too (at least 32 characters).
    ...loadConfig({
      DATABASE_URL: url,
      SECRET_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY,
      LOG_LEVEL: 'silent',
      ADMIN_TOKEN: options.config?.adminToken,
      METRICS_TOKEN: options.config?.metricsToken,
    }),
    dataDir,
    clamdAddress: `unix:${path.join(dataDir, 'no-clamd.sock')}`,
    ...options.config,
  };
  const services = await createServices(
    config,
    { pool, url, kind: 'external', close: async () => undefined },
    options.now,
  );
  const app = await buildApp(services, { logger: options.logger ?? false });
  await options.beforeListen?.(app, services);
  await app.listen({ host: '127.0.0.1', port: 0 });
  t.teardown(async () => {
    await app.close();
    await services.rateLimits.close();
    await services.keys.close();
  });
  const address = app.server.address();
  const baseUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  return {
    app,
    services,
    pool,
    baseUrl,
    request(path, init = {}) {
      const headers = new Headers(init.headers);
      if (init.key) headers.set('authorization', `Bearer ${init.key}`);
      let body = init.body;
      if (init.json !== undefined) {
        headers.set('content-type', 'application/json');
        body = JSON.stringify(init.json);
      }
      return fetch(baseUrl + path, { ...init, headers, body });
    },
  };
}

export function demoDefinition(overrides: Partial<WorkspaceDefinition> = {}): WorkspaceDefinition {
  const base = JSON.parse(
    readFileSync(new URL('../../definitions/demo-workspace.json', import.meta.url), 'utf8'),
  ) as WorkspaceDefinition;
  return validateDefinition({ ...base, slug: `ws-${randomBytes(4).toString('hex')}`, ...overrides });
}

export interface SeededWorkspace {
  workspace: Workspace;
  /** Secret keys with every scope, live and test. */
  live: string;
  test: string;
  /** Public live and test keys allowed from https://www.example.com. */
  publicLive: string;
  publicTest: string;
  /** A personal access token of the owner asha@northstar.example (the admin interface's credential). */
  staffToken: string;
  /** A personal access token of another member (created once per email, carrying their role). */
  tokenFor(email: string): Promise<string>;
  /** Creates another key on this workspace. */
  key(options: {
    kind?: 'secret' | 'public';
    mode?: 'live' | 'test';
    scopes?: Scope[];
    origins?: string[];
    ips?: string[];
    expiresAt?: Date;
    sourceKey?: string;
  }): Promise<{ id: string; value: string }>;
}

export const ALLOWED_ORIGIN = 'https://www.example.com';

/** Applies the demo definition (with overrides) and creates one key of each kind and mode. */
export async function seedWorkspace(
  testApp: Pick<TestApp, 'pool' | 'services'>,
  overrides: Partial<WorkspaceDefinition> = {},
): Promise<SeededWorkspace> {
  const { workspace } = await applyDefinition(testApp.pool, demoDefinition(overrides), testApp.services.secretBox);
  const key: SeededWorkspace['key'] = async (o) => {
    const kind = o.kind ?? 'secret';
    const { record, value } = await createKey(testApp.pool, {
      tenantId: workspace.id,
      name: 'test key',
      kind,
      mode: o.mode ?? 'live',
      scopes: o.scopes ?? (kind === 'public' ? ['leads:create'] : [...SCOPES]),
      allowedOrigins: kind === 'public' ? (o.origins ?? [ALLOWED_ORIGIN]) : [],
      ipAllowlist: o.ips ?? [],
      expiresAt: o.expiresAt ?? null,
      sourceKey: o.sourceKey ?? null,
    });
    return { id: record.id, value };
  };
  const tokens = new Map<string, Promise<string>>();
  const tokenFor = (email: string) => {
    const lower = email.toLowerCase();
    if (!tokens.has(lower)) tokens.set(lower, staffAccessToken(testApp, workspace, lower));
    return tokens.get(lower)!;
  };
  const owner = workspace.settings.users.find((u) => u.role === 'owner' && u.active)!;
  return {
    workspace,
    staffToken: await tokenFor(owner.email),
    tokenFor,
    live: (await key({ mode: 'live' })).value,
    test: (await key({ mode: 'test' })).value,
    publicLive: (await key({ kind: 'public', mode: 'live' })).value,
    publicTest: (await key({ kind: 'public', mode: 'test' })).value,
    key,
  };
}

/** A personal access token for a member of the workspace (any user of it, active or not), valid for a year. */
export async function staffAccessToken(
  testApp: Pick<TestApp, 'pool' | 'services'>,
  workspace: Workspace,
  email: string,
): Promise<string> {
  const user = workspace.settings.users.find((u) => u.email === email.toLowerCase());
  if (!user) throw new Error(`${email} is not a user of ${workspace.slug}`);
  const now = testApp.services.now();
  const account = await ensureAccount(testApp.pool, user, now);
  const { value } = await createAccessToken(testApp.pool, {
    accountId: account.id,
    tenantId: workspace.id,
    role: user.role,
    name: 'tests',
    expiresAt: new Date(now.getTime() + 365 * 24 * 3600_000),
    now,
    madeWithPasskey: false,
  });
  return value;
}
