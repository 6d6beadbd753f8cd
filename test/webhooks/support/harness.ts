import { randomUUID } from 'node:crypto';
import { pino } from 'pino';
import type { Test } from 'tap';
import type { Config } from '../../../src/config.js';
import { runCommand } from '../../../src/commands/run-command.js';
import type { CommandContext, RecordedEvent } from '../../../src/events/types.js';
import { startWorkers, type WorkerOptions, type Workers } from '../../../src/subscribers/index.js';
import type { Resolver } from '../../../src/webhooks/address-guard.js';
import { configureWebhookRuntime } from '../../../src/webhooks/runtime.js';
import type { WorkspaceDefinition } from '../../../src/workspaces/definition.js';
import { seedWorkspace, startApp, type SeededWorkspace, type TestApp } from '../../support/app.js';
import { TestReceiver } from './receiver.js';
import { makeTestPki, type TestPki } from './tls.js';

export const ADMIN_TOKEN = 'test-admin-token-0123456789abcdef';

/** A resolver for test names: a table the test can change (DNS rebinding), with no outside network. */
export class TestResolver {
  readonly table = new Map<string, string[]>([
    ['localhost', ['127.0.0.1']],
    ['hooks.test', ['127.0.0.1']],
  ]);
  resolve: Resolver = async (hostname) => {
    const found = this.table.get(hostname.replace(/\.$/, ''));
    if (!found) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    return found.map((address) => ({ address, family: address.includes(':') ? (6 as const) : (4 as const) }));
  };
}

export interface Harness extends TestApp {
  pki: TestPki;
  receiver: TestReceiver;
  resolver: TestResolver;
  ws: SeededWorkspace;
  /** Starts a set of workers (fan-out and delivery) on these services; stopped at teardown. */
  startWorkers(options?: WorkerOptions): Promise<Workers>;
  /** Creates an endpoint through POST /v1/webhooks; returns the 201 body. */
  createEndpoint(
    body: Record<string, unknown>,
    key?: string,
  ): Promise<{ id: string; secret: string; [k: string]: unknown }>;
  /** Appends an event as another helper's command would: a webhook kind with `data.payload`, or an internal event without. */
  appendEvent(
    type: string,
    payload: Record<string, unknown> | null,
    options?: { sandbox?: boolean; stream?: string },
  ): Promise<RecordedEvent>;
  admin(method: string, path: string, json?: unknown): Promise<Response>;
}

export async function webhookHarness(
  t: Test,
  options: {
    now?: () => Date;
    allowLoopback?: boolean;
    definition?: Partial<WorkspaceDefinition>;
    pki?: TestPki;
    config?: Partial<Config>;
  } = {},
): Promise<Harness> {
  const pki = options.pki ?? makeTestPki();
  if (!options.pki) t.teardown(() => pki.cleanup());
  const receiver = await TestReceiver.start(pki);
  t.teardown(() => receiver.close());
  const testApp = await startApp(t, {
    config: { webhookAllowLoopback: options.allowLoopback ?? true, adminToken: ADMIN_TOKEN, ...options.config },
    now: options.now,
  });
  const resolver = new TestResolver();
  configureWebhookRuntime(testApp.services, { ca: pki.ca, resolve: resolver.resolve });
  // The suites make many management calls in a row; the plan's rate limit is not what they test.
  const rate = { scopes: { 'webhooks:manage': { capacity: 1000, refill_per_second: 100 } } };
  const ws = await seedWorkspace(testApp, { ...options.definition, limits: { rate, ...options.definition?.limits } });
  const running: Workers[] = [];
  t.teardown(async () => {
    for (const w of running) await w.stop();
  });
  return {
    ...testApp,
    pki,
    receiver,
    resolver,
    ws,
    async startWorkers(workerOptions = {}) {
      const workers = await startWorkers(testApp.services, pino({ level: 'silent' }), {
        pollIntervalMs: 25,
        ...workerOptions,
      });
      running.push(workers);
      return workers;
    },
    async createEndpoint(body, key = ws.live) {
      const response = await testApp.request('/v1/webhooks', { method: 'POST', key, json: body });
      const json = (await response.json()) as { id: string; secret: string };
      if (response.status !== 201)
        throw new Error(`POST /v1/webhooks answered ${response.status}: ${JSON.stringify(json)}`);
      return json;
    },
    async appendEvent(type, payload, o = {}) {
      const stream = o.stream ?? `webhook-test-resource-${randomUUID()}`;
      const context: CommandContext = {
        tenantId: ws.workspace.id,
        sandbox: o.sandbox ?? false,
        metadata: { actor: { type: 'system', name: 'webhook test' }, correlation_id: randomUUID() },
        now: testApp.services.now(),
      };
      const [event] = await runCommand(testApp.services.store, context, [stream], (tx) =>
        tx.append(stream, 'any', [{ type, data: payload ? { payload } : { note: 'internal' } }]),
      );
      return event!;
    },
    admin(method, path, json) {
      return testApp.request(`/admin/v1/workspaces/${ws.workspace.slug}${path}`, {
        method,
        headers: { authorization: `Bearer ${ws.staffToken}` },
        ...(json !== undefined ? { json } : {}),
      });
    },
  };
}

/**
 * A made-up resource payload; delivery never looks inside. The suites use the document kinds in streams of their own,
 * which the documents projection (of `document-` streams only) leaves alone, so they stay independent of the read
 * models (task, invoice, payment and refund events are read by the tasks and invoices projections and so must be real
 * ones).
 */
export function resourcePayload(name = 'passport.pdf'): Record<string, unknown> {
  return {
    id: randomUUID(),
    file_name: name,
    size_bytes: 182_331,
    uploaded_at: '2026-11-01T10:00:00.000Z',
    note: 'naïve ✓ unicode',
  };
}
