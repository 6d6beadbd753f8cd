import { readFileSync } from 'node:fs';
import { pino } from 'pino';
import type { Test } from 'tap';
import { JobWorker, type JobWorkerOptions } from '../../src/subscribers/job-worker.js';
import { jobKindsOf } from '../../src/subscribers/job-kinds.js';
import type { TestApp } from '../support/app.js';
import type { ConsoleClient } from './support.js';

export const fixture = (name: string) => readFileSync(new URL(`../fixtures/imports/${name}`, import.meta.url));

/** Uploads a CSV file through the import form (its CSRF token in the form's action, as the page renders it). */
export async function uploadCsv(c: ConsoleClient, slug: string, bytes: Uint8Array, name = 'leads.csv') {
  const form = await c.get(`/console/w/${slug}/leads/import`);
  const action = /<form method="post" action="([^"]+)" enctype="multipart\/form-data"/.exec(form.text)?.[1];
  if (!action) throw new Error(`no upload form (status ${form.status})`);
  const body = new FormData();
  body.set('file', new Blob([bytes], { type: 'text/csv' }), name);
  const response = await fetch(c.app.baseUrl + action.replaceAll('&amp;', '&'), {
    method: 'POST',
    redirect: 'manual',
    headers: { cookie: c.cookie!, origin: c.app.baseUrl },
    body,
  });
  return { status: response.status, text: await response.text(), location: response.headers.get('location') };
}

/** The mapping the import page proposes: each column's selected field. */
export function proposedMapping(page: string): Record<string, string> {
  const mapping: Record<string, string> = {};
  for (const select of page.matchAll(/<select\s+id="f-col-(\d+)"\s+name="(col_\d+)"[^>]*>([\s\S]*?)<\/select>/g)) {
    mapping[select[2]!] = /<option value="([^"]*)" selected>/.exec(select[3]!)?.[1] ?? '';
  }
  return mapping;
}

/** Checks the rows with the proposed mapping (consent given) and answers the import's page path. */
export async function checkProposed(c: ConsoleClient, importPath: string, change: Record<string, string> = {}) {
  const page = await c.get(importPath);
  const checked = await c.post(`${importPath}/mapping`, { ...proposedMapping(page.text), ...change, consent: 'yes' });
  return checked;
}

/** A job worker over the app's services, stopped at the test's end. */
export function startJobWorker(t: Test, app: TestApp, options: JobWorkerOptions = {}) {
  const worker = new JobWorker(
    app.services,
    jobKindsOf(app.services),
    pino({ level: process.env.DEBUG_LOG ? 'error' : 'silent' }),
    {
      pollIntervalMs: 50,
      ...options,
    },
  );
  worker.start();
  t.teardown(() => worker.stop());
  return worker;
}

/** Waits until the upload's import job has ended; its progress page. */
export async function importEnded(c: ConsoleClient, importPath: string, ms = 120_000): Promise<string> {
  const until = Date.now() + ms;
  for (;;) {
    const page = await c.get(`${importPath}/progress`);
    if (!page.text.includes('data-refresh')) return page.text;
    if (Date.now() > until) throw new Error(`the import at ${importPath} did not end in ${ms} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
