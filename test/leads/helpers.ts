import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { Test } from 'tap';
import { LEAD_FIELDS } from '../../src/domain/leads/lead.js';
import { ALLOWED_ORIGIN, seedWorkspace, startApp, type SeededWorkspace, type TestApp } from '../support/app.js';
import type { Config } from '../../src/config.js';
import type { WorkspaceDefinition } from '../../src/workspaces/definition.js';

export { ALLOWED_ORIGIN, LEAD_FIELDS };

let counter = 0;

/** A valid LeadCreate body for a new person (unique phone and email each call). */
export function leadBody(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  counter += 1;
  const n = String(Date.now() % 1_000_000).padStart(6, '0');
  const unique = `${n}${String(counter % 1000).padStart(3, '0')}`;
  return {
    full_name: 'Priya Sharma',
    phone: `9${unique.slice(-9)}`,
    email: `priya.${unique}@example.com`,
    consent: true,
    ...overrides,
  };
}

export interface LeadsFixture extends TestApp, SeededWorkspace {
  post(
    body: unknown,
    options?: { key?: string; headers?: Record<string, string> },
  ): Promise<{ status: number; body: Record<string, unknown>; headers: Headers }>;
  get(path: string, key?: string): Promise<{ status: number; body: Record<string, unknown>; headers: Headers }>;
  patch(
    id: string,
    body: unknown,
    key?: string,
  ): Promise<{ status: number; body: Record<string, unknown>; headers: Headers }>;
}

async function read(response: Response) {
  const text = await response.text();
  return {
    status: response.status,
    body: text ? (JSON.parse(text) as Record<string, unknown>) : {},
    headers: response.headers,
  };
}

/** The app on a fresh database with the demo workspace (enterprise plan, so rate limits stay out of the way). */
export async function leadsFixture(
  t: Test,
  options: { config?: Partial<Config>; now?: () => Date; definition?: Partial<WorkspaceDefinition> } = {},
): Promise<LeadsFixture> {
  const app = await startApp(t, { config: options.config, now: options.now });
  const seeded = await seedWorkspace(app, {
    plan: 'enterprise',
    limits: {
      rate: {
        key: { capacity: 100_000, refill_per_second: 10_000 },
        scopes: {
          'leads:create': { capacity: 100_000, refill_per_second: 10_000 },
          'leads:read': { capacity: 100_000, refill_per_second: 10_000 },
          'leads:update': { capacity: 100_000, refill_per_second: 10_000 },
        },
      },
    },
    ...options.definition,
  });
  return {
    ...app,
    ...seeded,
    async post(body, o = {}) {
      const key = o.key ?? seeded.live;
      return read(await app.request('/v1/leads', { method: 'POST', key, json: body, headers: o.headers }));
    },
    async get(path, key = seeded.live) {
      return read(await app.request(path, { key }));
    },
    async patch(id, body, key = seeded.live) {
      return read(await app.request(`/v1/leads/${id}`, { method: 'PATCH', key, json: body }));
    },
  };
}

export interface FakeCaptcha {
  url: string;
  requests: Record<string, string>[];
  /** What the provider answers for a token; default: success for tokens starting with "ok". */
  answer: (form: Record<string, string>) => { status?: number; body: unknown };
}

/** A local siteverify endpoint speaking the providers' form-encoded protocol. */
export async function fakeCaptcha(t: Test): Promise<FakeCaptcha> {
  const fake: FakeCaptcha = {
    url: '',
    requests: [],
    answer: (form) => ({
      body: form.response?.startsWith('ok')
        ? { success: true, hostname: 'www.example.com' }
        : { success: false, 'error-codes': ['invalid-input-response'] },
    }),
  };
  const server: Server = createServer((req: IncomingMessage, res) => {
    let raw = '';
    req.on('data', (chunk: Buffer) => (raw += chunk.toString()));
    req.on('end', () => {
      const form = Object.fromEntries(new URLSearchParams(raw));
      fake.requests.push(form);
      const { status = 200, body } = fake.answer(form);
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(typeof body === 'string' ? body : JSON.stringify(body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  fake.url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/siteverify`;
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return fake;
}

/** Counts events of a type in one stream. */
export async function streamTypes(fixture: Pick<TestApp, 'services'>, leadId: string): Promise<string[]> {
  return (await fixture.services.store.readStream(`lead-${leadId}`)).map((e) => e.type);
}
