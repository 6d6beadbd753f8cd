import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import openapiTS, { astToString, type OpenAPI3 } from 'openapi-typescript';
import t from 'tap';
import ts from 'typescript';
import { projectRoot } from '../../src/shared/paths.js';
import { seedWorkspace, startApp } from '../support/app.js';
import { servedDocument } from '../support/openapi.js';

/**
 * What an integrator writes after `openapi-typescript /openapi.json -o api.ts`: openapi-fetch typed by the generated
 * paths. The `@ts-expect-error` lines fail the compilation if the types were too loose to catch the mistakes.
 */
const PROGRAM = `
import createClient from 'openapi-fetch';
import type { paths } from './api.js';

export interface Outcome {
  createdStatus: number;
  id: string;
  lead: { id: string; full_name: string; email: string | null; stage: string; consented_at: string | null };
  missing: { status: number; error: string | undefined };
}

export async function createAndReadLead(baseUrl: string, key: string, email: string): Promise<Outcome> {
  const client = createClient<paths>({ baseUrl, headers: { authorization: \`Bearer \${key}\` } });
  const created = await client.POST('/v1/leads', {
    params: { header: { 'idempotency-key': 'generated-client-1' } },
    body: { full_name: 'Generated Client', email, consent: true, visa_type: 'student' },
  });
  if (created.error) throw new Error(\`createLead answered \${created.error.error}: \${created.error.message}\`);
  const id: string = created.data.id;

  const read = await client.GET('/v1/leads/{id}', { params: { path: { id } } });
  if (read.error) throw new Error(\`getLead answered \${read.error.error}\`);
  const lead = read.data;

  const missing = await client.GET('/v1/leads/{id}', {
    params: { path: { id: '0190a5c4-8c1e-7000-8000-000000000001' } },
  });

  // @ts-expect-error full_name is a string in the document
  void (() => client.POST('/v1/leads', { body: { full_name: 42, consent: true } }));
  // @ts-expect-error visa_type is one of the document's values
  void (() => client.POST('/v1/leads', { body: { full_name: 'A', consent: true, visa_type: 'tourist' } }));
  // @ts-expect-error the document has no such path
  void (() => client.GET('/v1/no-such-path'));
  // @ts-expect-error a lead id is a path parameter the call must give
  void (() => client.GET('/v1/leads/{id}', {}));

  return {
    createdStatus: created.response.status,
    id,
    lead: {
      id: lead.id,
      full_name: lead.full_name,
      email: lead.email,
      stage: lead.stage.key,
      consented_at: lead.consent?.at ?? null,
    },
    missing: { status: missing.response.status, error: missing.error?.error },
  };
}
`;

const COMPILER_OPTIONS: ts.CompilerOptions = {
  strict: true,
  noUncheckedIndexedAccess: true,
  exactOptionalPropertyTypes: true,
  noImplicitReturns: true,
  target: ts.ScriptTarget.ES2022,
  module: ts.ModuleKind.NodeNext,
  moduleResolution: ts.ModuleResolutionKind.NodeNext,
  lib: ['lib.es2023.d.ts', 'lib.dom.d.ts'],
  types: [],
  skipLibCheck: false,
};

/** Compiles the program with tsc's own API; the diagnostics, formatted, are empty when it compiles. */
function compile(files: string[]): string[] {
  const program = ts.createProgram(files, COMPILER_OPTIONS);
  const emitted = program.emit();
  return ts
    .getPreEmitDiagnostics(program)
    .concat(emitted.diagnostics)
    .map((d) =>
      ts.formatDiagnostic(d, { getCanonicalFileName: (f) => f, getCurrentDirectory: () => '', getNewLine: () => '\n' }),
    );
}

t.test('a client generated from /openapi.json compiles under strict and creates and reads a lead', async (t) => {
  const api = await startApp(t);
  const ws = await seedWorkspace(api);
  const document = await servedDocument(api, '/openapi.json');

  // Inside the project, so the program's imports find openapi-fetch in node_modules as an integrator's would.
  const cache = path.join(projectRoot(), 'node_modules', '.cache');
  mkdirSync(cache, { recursive: true });
  const dir = mkdtempSync(path.join(cache, 'generated-client-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));

  const types = astToString(await openapiTS(document as unknown as OpenAPI3));
  t.match(types, /"\/v1\/leads\/\{id\}"/, 'the generated types name the paths');
  t.match(types, /createLead: \{/, 'and the operations by their operationId');
  writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ type: 'module', private: true }));
  writeFileSync(path.join(dir, 'api.ts'), types);
  writeFileSync(path.join(dir, 'client.ts'), PROGRAM);

  t.same(compile([path.join(dir, 'client.ts')]), [], 'tsc compiles the program with strict on, and no diagnostic');

  const { createAndReadLead } = (await import(pathToFileURL(path.join(dir, 'client.js')).href)) as {
    createAndReadLead: (baseUrl: string, key: string, email: string) => Promise<Record<string, unknown>>;
  };
  const outcome = await createAndReadLead(api.baseUrl, ws.live, 'generated.client@example.org');
  t.match(outcome, {
    createdStatus: 201,
    id: /^[0-9a-f-]{36}$/,
    lead: { full_name: 'Generated Client', email: 'generated.client@example.org', stage: String },
    missing: { status: 404, error: 'not_found' },
  });
  t.equal((outcome.lead as { id: string }).id, outcome.id, 'the lead read back is the lead created');
  t.match((outcome.lead as { consented_at: string }).consented_at, /^\d{4}-\d{2}-\d{2}T/);
});
