import fc from 'fast-check';
import t from 'tap';
import type { AdminApplication } from '../../src/schemas/application.js';
import { appFixture, type AppFixture } from '../applications/support.js';
import { seedWorkspace } from '../support/app.js';
import { checkProperty } from '../support/properties.js';

// The auditors' routes: a record's history, paged, and its state at any instant replayed from its stream with the
// evolve functions the service runs, compared with the read models the projections keep.

const pause = () => new Promise((r) => setTimeout(r, 3));

async function json<T = Record<string, unknown>>(response: Response): Promise<{ status: number; body: T }> {
  return { status: response.status, body: (await response.json()) as T };
}

async function patchLead(f: AppFixture, id: string, body: Record<string, unknown>): Promise<void> {
  const response = await f.app.request(`/v1/leads/${id}`, { method: 'PATCH', key: f.ws.live, json: body });
  if (response.status !== 200) throw new Error(`PATCH answered ${response.status}: ${await response.text()}`);
}

async function readLead(f: AppFixture, id: string): Promise<Record<string, unknown>> {
  return (await (await f.app.request(`/v1/leads/${id}`, { key: f.ws.live })).json()) as Record<string, unknown>;
}

async function readApplication(f: AppFixture, id: string): Promise<AdminApplication> {
  return (await (await f.admin(`/applications/${id}`)).json()) as AdminApplication;
}

const TEMPERATURES = ['hot', 'warm', 'cold'];

t.test('every lead and application of a busy workspace, replayed to now, equals its read model', async (t) => {
  const f = await appFixture(t);
  const leads: string[] = [];
  const applications: string[] = [];
  for (let i = 0; i < 12; i++) {
    const id = await f.lead();
    leads.push(id);
    for (let k = 0; k < i % 4; k++) await patchLead(f, id, { temperature: TEMPERATURES[(i + k) % 3] });
    if (i % 3 === 0) {
      const view = await f.convert(id);
      applications.push(view.id);
      await f.admin(`/applications/${view.id}/modules/sop/select`, { method: 'POST' });
      if (i % 2 === 0)
        await f.admin(`/applications/${view.id}/modules/profile_review/state`, {
          method: 'PUT',
          json: { state: 'updated' },
        });
    }
  }
  const now = new Date().toISOString();
  for (const id of leads) {
    const { status, body } = await json<{ lead: unknown; revision: number; as_of: string }>(
      await f.admin(`/leads/${id}/state?as_of=${encodeURIComponent(now)}`),
    );
    t.equal(status, 200);
    t.same(body.lead, await readLead(f, id), `lead ${id}: replayed = read model`);
    t.equal(body.as_of, now);
  }
  for (const id of applications) {
    const { status, body } = await json<{ application: unknown }>(
      await f.admin(`/applications/${id}/state?as_of=${encodeURIComponent(now)}`),
    );
    t.equal(status, 200);
    t.same(body.application, await readApplication(f, id), `application ${id}: replayed = read model`);
  }
});

t.test('the state as of each past instant is the record as it read at that instant', async (t) => {
  const f = await appFixture(t);
  const before = new Date().toISOString();
  await pause();
  const id = await f.lead();
  const leadSnapshots: [string, Record<string, unknown>][] = [];
  const snapLead = async () => {
    leadSnapshots.push([new Date().toISOString(), await readLead(f, id)]);
    await pause();
  };
  await snapLead();
  for (const temperature of ['hot', 'cold', 'warm']) {
    await patchLead(f, id, { temperature });
    await snapLead();
  }
  const view = await f.convert(id);
  await snapLead();
  const appSnapshots: [string, AdminApplication][] = [];
  const snapApplication = async () => {
    appSnapshots.push([new Date().toISOString(), await readApplication(f, view.id)]);
    await pause();
  };
  await snapApplication();
  await f.admin(`/applications/${view.id}/modules/sop/select`, { method: 'POST' });
  await snapApplication();
  await f.admin(`/applications/${view.id}/modules/profile_review/state`, { method: 'PUT', json: { state: 'updated' } });
  await snapApplication();

  for (const [at, lead] of leadSnapshots) {
    const { body } = await json<{ lead: unknown }>(await f.admin(`/leads/${id}/state?as_of=${encodeURIComponent(at)}`));
    t.same(body.lead, lead, `lead as of ${at}`);
  }
  for (const [at, application] of appSnapshots) {
    const { body } = await json<{ application: unknown }>(
      await f.admin(`/applications/${view.id}/state?as_of=${encodeURIComponent(at)}`),
    );
    t.same(body.application, application, `application as of ${at}`);
  }

  const early = await json<{ error: string }>(await f.admin(`/leads/${id}/state?as_of=${before}`));
  t.equal(early.status, 404, 'before its first event the lead did not exist');
  t.equal(early.body.error, 'not_found');
  const future = new Date(Date.now() + 60_000).toISOString();
  const ahead = await json<{ error: string; fields: Record<string, string> }>(
    await f.admin(`/leads/${id}/state?as_of=${future}`),
  );
  t.equal(ahead.status, 400, 'an instant in the future is refused');
  t.match(ahead.body, { error: 'validation_failed', fields: { as_of: /future/ } });
  for (const bad of ['yesterday', '2026-02-30T10:00:00Z', ''])
    t.equal((await f.admin(`/leads/${id}/state?as_of=${encodeURIComponent(bad)}`)).status, 400, `as_of=${bad}`);
  t.equal((await f.admin(`/leads/${id}/state`)).status, 400, 'as_of is required');
});

t.test('history pages, with any page sizes, give the whole ordered stream once', async (t) => {
  const f = await appFixture(t);
  const id = await f.lead();
  for (let i = 0; i < 14; i++) await patchLead(f, id, { temperature: TEMPERATURES[i % 3] });
  const view = await f.convert(id);
  const stream = (await f.app.services.store.readStream(`lead-${id}`)).map((e) => e.id);
  t.ok(stream.length >= 16, `${stream.length} events in the lead's stream`);

  const first = await json<{ data: Record<string, unknown>[]; has_more: boolean }>(
    await f.admin(`/leads/${id}/history?limit=2`),
  );
  t.equal(first.status, 200);
  t.match(first.body.data[0], {
    id: stream[0],
    type: 'lead.created',
    revision: 0,
    at: /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/,
    actor: { type: 'key' },
    summary: String,
    facts: { payload: { id } },
  });
  t.equal(first.body.has_more, true);

  await checkProperty(
    t,
    'pages concatenate to the stream',
    fc.asyncProperty(fc.array(fc.integer({ min: 1, max: 100 }), { minLength: 1, maxLength: 20 }), async (sizes) => {
      const seen: string[] = [];
      let after: string | undefined;
      for (let page = 0; ; page++) {
        const limit = sizes[page % sizes.length]!;
        const query = `limit=${limit}${after ? `&starting_after=${after}` : ''}`;
        const { body } = await json<{ data: { id: string }[]; has_more: boolean }>(
          await f.admin(`/leads/${id}/history?${query}`),
        );
        seen.push(...body.data.map((e) => e.id));
        if (!body.has_more) break;
        after = body.data[body.data.length - 1]!.id;
      }
      return JSON.stringify(seen) === JSON.stringify(stream);
    }),
    25,
  );

  const application = await json<{ data: { type: string }[] }>(await f.admin(`/applications/${view.id}/history`));
  t.equal(application.status, 200);
  t.equal(application.body.data[0]!.type, 'application.opened', 'an application’s history starts with its opening');
  const unknownAfter = await f.admin(`/leads/${id}/history?starting_after=${view.id}`);
  t.equal(unknownAfter.status, 400, 'starting_after must be an event of this record');
  for (const limit of ['0', '101', 'x']) t.equal((await f.admin(`/leads/${id}/history?limit=${limit}`)).status, 400);
});

t.test('another workspace’s records are not found, in either route', async (t) => {
  const f = await appFixture(t);
  const other = await seedWorkspace(f.app);
  const response = await f.app.request('/v1/leads', {
    method: 'POST',
    key: other.live,
    json: { full_name: 'Other Person', email: 'other.person@example.org', consent: true },
  });
  const foreign = ((await response.json()) as { id: string }).id;
  const now = encodeURIComponent(new Date().toISOString());
  for (const path of [`/leads/${foreign}/history`, `/leads/${foreign}/state?as_of=${now}`]) {
    const { status, body } = await json<{ error: string }>(await f.admin(path));
    t.equal(status, 404, path);
    t.equal(body.error, 'not_found');
  }
  const sandboxOnly = await f.lead(f.ws.test);
  t.equal((await f.admin(`/leads/${sandboxOnly}/history`)).status, 404, 'a sandbox lead is not in the live history');
  t.equal((await f.admin(`/leads/${sandboxOnly}/history`, { sandbox: true })).status, 200, 'but in the sandbox one');
});
