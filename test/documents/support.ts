import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Test } from 'tap';
import type { Document } from '../../src/domain/documents/index.js';
import type { WorkspaceDefinition } from '../../src/workspaces/definition.js';
import { seedWorkspace, startApp, type TestApp } from '../support/app.js';
import { TestClamd } from '../support/clamd.js';
import { ADMIN_TOKEN, fixtureFor, type AppFixture } from '../applications/support.js';
import { webhookHarness, type Harness } from '../webhooks/support/harness.js';

/** What an upload form holds: a lead or a case, a document type, a file. */
export interface UploadForm {
  lead_id?: string;
  application_id?: string;
  type?: string;
  file?: { bytes: Buffer; name: string; type?: string };
}

/** A real clamd (the test signatures) and a data folder of its own, both gone when the test ends. */
async function scannerAndFolder(
  t: Test,
  clamdOptions: Parameters<typeof TestClamd.start>[0] = {},
): Promise<{ clamd: TestClamd; dataDir: string }> {
  const clamd = await TestClamd.start(clamdOptions);
  t.teardown(() => clamd.close());
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'vcrm-docs-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  return { clamd, dataDir };
}

/** POSTs a multipart upload to a workspace's admin documents route. */
function postUpload(
  request: TestApp['request'],
  slug: string,
  staffToken: string,
  form: UploadForm,
  options: { sandbox?: boolean } = {},
): Promise<Response> {
  const body = new FormData();
  if (form.type !== undefined) body.set('type', form.type);
  if (form.lead_id !== undefined) body.set('lead_id', form.lead_id);
  if (form.application_id !== undefined) body.set('application_id', form.application_id);
  if (form.file)
    body.set(
      'file',
      new Blob([form.file.bytes], { type: form.file.type ?? 'application/octet-stream' }),
      form.file.name,
    );
  return request(`/admin/v1/workspaces/${slug}/documents${options.sandbox ? '?sandbox=true' : ''}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${staffToken}` },
    body,
  });
}

export interface DocumentFixture extends AppFixture {
  clamd: TestClamd;
  dataDir: string;
  /** POST a multipart upload to the admin interface. */
  upload(form: UploadForm, options?: { sandbox?: boolean }): Promise<Response>;
  /** The files in the incoming and stored folders. */
  files(): { incoming: string[]; stored: string[] };
}

/** The app on a fresh database with a real clamd (the test signatures) and a data folder of its own. */
export async function documentFixture(
  t: Test,
  overrides: Partial<WorkspaceDefinition> = {},
  options: { now?: () => Date; clamd?: Parameters<typeof TestClamd.start>[0] } = {},
): Promise<DocumentFixture> {
  const { clamd, dataDir } = await scannerAndFolder(t, options.clamd);
  const app = await startApp(t, {
    config: { adminToken: ADMIN_TOKEN, clamdAddress: clamd.address, dataDir },
    now: options.now,
  });
  const ws = await seedWorkspace(app, overrides);
  const base = fixtureFor(app, ws);
  const list = (folder: string) => {
    try {
      return readdirSync(path.join(dataDir, 'documents', folder)).sort();
    } catch {
      return [];
    }
  };
  return {
    ...base,
    clamd,
    dataDir,
    upload: (form, o = {}) => postUpload(app.request, ws.workspace.slug, ws.staffToken, form, o),
    files: () => ({ incoming: list('incoming'), stored: list('stored') }),
  };
}

/**
 * The webhook harness (a real HTTPS receiver, workers on demand) with a real clamd and a data folder: for tests of
 * what documents announce and what erasure does to them.
 */
export async function documentWebhookHarness(
  t: Test,
): Promise<{ h: Harness; clamd: TestClamd; dataDir: string; upload(form: UploadForm): Promise<Response> }> {
  const { clamd, dataDir } = await scannerAndFolder(t);
  const h = await webhookHarness(t, { config: { clamdAddress: clamd.address, dataDir } });
  return {
    h,
    clamd,
    dataDir,
    upload: (form) => postUpload(h.request, h.ws.workspace.slug, h.ws.staffToken, form),
  };
}

export async function documentOf(t: Test, response: Response, status: number): Promise<Document> {
  const text = await response.text();
  t.equal(response.status, status, `answered ${response.status}: ${response.status === status ? '' : text}`);
  return JSON.parse(text) as Document;
}
