import t, { type Test } from 'tap';
import { LEAD_EVENT_TYPES } from '../../src/domain/leads/lead.js';
import { EVENT_KINDS } from '../../src/shared/enums.js';
import { verifyWebhook } from '../../src/webhooks/verify.js';
import { TestClock } from '../support/app.js';
import { resourcePayload, webhookHarness, type Harness } from '../webhooks/support/harness.js';
import { hmacHex, signatureParts, waitFor, type ReceivedRequest } from '../webhooks/support/receiver.js';
import { LEAD_FIELDS, leadBody } from './helpers.js';

// What a PATCH delivers to a real HTTPS endpoint created with POST /v1/webhooks: which lead events (docs/decisions.md,
// Leads → Update → Events), in which order, and bodies in the spec's envelope with the Lead as `data`.

/** The lead's events sent to webhooks (its event types that are kinds), so a lead kind added is delivered here too. */
const LEAD_KINDS = LEAD_EVENT_TYPES.filter((type) => (EVENT_KINDS as readonly string[]).includes(type));
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const UTC_DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

interface Envelope {
  id: string;
  event: string;
  tenant_id: string;
  created_at: string;
  data: Record<string, unknown>;
}

interface Fixture {
  h: Harness;
  clock: TestClock;
  secret: string;
  /** Requests already looked at by an earlier step. */
  seen: Set<ReceivedRequest>;
}

async function fixture(t: Test): Promise<Fixture> {
  // The clock starts at the real time: receivers check the signature's `t` against their own clock.
  const clock = new TestClock(new Date());
  const h = await webhookHarness(t, { now: clock.now });
  // Every lead kind, so any extra lead event a PATCH emitted would be delivered and seen; document.uploaded for markers.
  const endpoint = await h.createEndpoint({
    url: h.receiver.url('127.0.0.1', '/lead-hooks'),
    events: [...LEAD_KINDS, 'document.uploaded'],
  });
  await h.startWorkers();
  return { h, clock, secret: endpoint.secret, seen: new Set() };
}

/**
 * Waits until everything appended so far is delivered: a marker event appended after the step is fanned out after
 * it (the fan-out follows the log's order), so once the marker arrived and no delivery is pending, every delivery
 * of the step has arrived. Returns the lead deliveries of `leadId` not returned before.
 */
async function deliveredSince(f: Fixture, leadId: string): Promise<ReceivedRequest[]> {
  const marker = await f.h.appendEvent('document.uploaded', resourcePayload('marker'));
  await waitFor(() => f.h.receiver.forEvent(marker.id).length === 1, 'the marker is delivered');
  await waitFor(
    async () =>
      (
        await f.h.pool.query<{ n: number }>(
          "SELECT count(*)::int AS n FROM webhook_deliveries WHERE status <> 'succeeded'",
        )
      ).rows[0]!.n === 0,
    'no delivery is pending',
  );
  const fresh = f.h.receiver.requests.filter(
    (r) =>
      !f.seen.has(r) &&
      LEAD_KINDS.includes(String(r.headers['x-service-event'])) &&
      (JSON.parse(r.body) as Envelope).data.id === leadId,
  );
  for (const r of f.h.receiver.requests) f.seen.add(r);
  return fresh;
}

/** The public lead events a step appended to the lead's stream (after `revision`), in stream order. */
async function publicEventsAfter(f: Fixture, leadId: string, revision: number) {
  return (await f.h.services.store.readStream(`lead-${leadId}`)).filter(
    (e) => e.revision > revision && LEAD_KINDS.includes(e.type),
  );
}

async function lastRevision(f: Fixture, leadId: string): Promise<number> {
  return (await f.h.services.store.readStream(`lead-${leadId}`)).at(-1)!.revision;
}

/** Checks a delivery's headers, signature and envelope against the spec; returns the envelope. */
function checkDelivery(t: Test, f: Fixture, request: ReceivedRequest): Envelope {
  t.equal(request.method, 'POST');
  t.equal(request.headers['content-type'], 'application/json');
  t.equal(request.headers['user-agent'], 'Service-Webhooks/1.0');
  t.match(
    request.headers['x-service-signature'],
    /^t=\d+,v1=[0-9a-f]{64}$/,
    'X-Service-Signature is t=<unix seconds>,v1=<hex>',
  );
  const signature = signatureParts(request);
  t.same(
    signature.v1,
    [hmacHex(f.secret, `${signature.t}.${request.body}`)],
    'one v1: HMAC-SHA256 of "<t>.<raw body>" under the endpoint secret',
  );
  const verified = verifyWebhook({
    body: request.body,
    signature: String(request.headers['x-service-signature']),
    secret: f.secret,
  });

  const envelope = JSON.parse(request.body) as Envelope;
  t.same(verified, envelope, 'the receiver-side verifier accepts it');
  t.same(
    Object.keys(envelope).sort(),
    ['created_at', 'data', 'event', 'id', 'payload_version', 'resource', 'tenant_id'],
    'the envelope (payload version 2026-11-29) has exactly id, event, tenant_id, created_at, payload_version, resource, data',
  );
  const resource = (envelope as unknown as { resource: { type: string; id: string; version: number } }).resource;
  t.equal(resource.type, 'lead', "a lead event's resource is the lead");
  t.equal(resource.id, (envelope.data as { id?: string }).id, 'the resource id is the lead id');
  t.ok(Number.isInteger(resource.version) && resource.version >= 1, 'with its version');
  t.match(envelope.id, UUID);
  t.equal(envelope.tenant_id, f.h.ws.workspace.id);
  t.match(envelope.created_at, UTC_DATE_TIME);
  t.equal(request.headers['x-service-event'], envelope.event, 'X-Service-Event is the event kind');
  t.match(request.headers['x-service-delivery'], UUID, 'X-Service-Delivery is a uuid');
  t.type(envelope.data, 'object');
  return envelope;
}

/** Checks that a step delivered exactly its public events, once each, as the stream holds them; returns the envelopes in stream order. */
async function deliveredInOrder(
  t: Test,
  f: Fixture,
  leadId: string,
  revisionBefore: number,
  expected: string[],
): Promise<Envelope[]> {
  const requests = await deliveredSince(f, leadId);
  const events = await publicEventsAfter(f, leadId, revisionBefore);
  t.same(
    events.map((e) => e.type),
    expected,
    `the PATCH emitted ${expected.join(', ')}, in this order`,
  );
  t.equal(
    requests.length,
    expected.length,
    `exactly ${expected.length} lead delivery(ies) for the PATCH, no other lead event`,
  );
  const envelopes = requests.map((r) => checkDelivery(t, f, r));
  t.same(
    envelopes.map((e) => e.id).sort(),
    events.map((e) => e.id).sort(),
    'each emitted event delivered once, with its event id as envelope id',
  );
  return events.map((event) => {
    const envelope = envelopes.find((e) => e.id === event.id)!;
    t.equal(envelope.event, event.type);
    t.equal(envelope.created_at, event.createdAt.toISOString(), 'created_at is the event time');
    return envelope;
  });
}

async function createLead(t: Test, f: Fixture): Promise<{ id: string; lead: Record<string, unknown> }> {
  const res = await f.h.request('/v1/leads', { method: 'POST', key: f.h.ws.live, json: leadBody() });
  t.equal(res.status, 201);
  const { id } = (await res.json()) as { id: string };
  const created = await deliveredSince(f, id);
  t.same(
    created.map((r) => r.headers['x-service-event']),
    ['lead.created'],
    'the capture delivered lead.created only',
  );
  const lead = (await (await f.h.request(`/v1/leads/${id}`, { key: f.h.ws.live })).json()) as Record<string, unknown>;
  t.match(lead, {
    branch: { code: 'DEL' },
    owner: { email: 'vikram@northstar.example' },
    stage: { key: 'new' },
    temperature: null,
  });
  return { id, lead };
}

async function patch(
  f: Fixture,
  id: string,
  body: unknown,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await f.h.request(`/v1/leads/${id}`, { method: 'PATCH', key: f.h.ws.live, json: body });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

const leadOf = (data: Record<string, unknown>) =>
  Object.fromEntries(Object.entries(data).filter(([k]) => k !== 'changed_fields'));

t.test(
  'a PATCH of stage, temperature, follow-up and a custom field delivers one lead.updated: the Lead plus changed_fields',
  async (t) => {
    const f = await fixture(t);
    const { id, lead: before } = await createLead(t, f);
    f.clock.advance(1000);
    const revision = await lastRevision(f, id);

    const res = await patch(f, id, {
      stage_key: 'contacted',
      temperature: 'warm',
      next_follow_up_at: '2026-12-01T09:30:00+05:30',
      custom_fields: { budget_lakhs: 20 },
      note: 'Called; wants Canada',
    });
    t.equal(res.status, 200);
    const [updated] = await deliveredInOrder(t, f, id, revision, ['lead.updated']);
    const data = updated!.data;
    t.same(
      Object.keys(data).sort(),
      [...LEAD_FIELDS, 'changed_fields'].sort(),
      'data: every Lead field, changed_fields, nothing else',
    );
    t.same(
      [...(data.changed_fields as string[])].sort(),
      ['custom_fields', 'next_follow_up_at', 'stage', 'stage_changed_at', 'temperature'],
      'changed_fields lists the Lead fields whose values changed, without updated_at and last_activity_at',
    );
    t.equal(
      new Set(data.changed_fields as string[]).size,
      (data.changed_fields as string[]).length,
      'each field named once',
    );
    const at = f.clock.now().toISOString();
    t.same(
      leadOf(data),
      {
        ...before,
        stage: { key: 'contacted', name: 'Contacted' },
        temperature: 'warm',
        next_follow_up_at: '2026-12-01T04:00:00.000Z',
        custom_fields: { budget_lakhs: 20 },
        stage_changed_at: at,
        updated_at: at,
        last_activity_at: at,
      },
      'the Lead after the change; nothing else moved',
    );
    t.same(leadOf(data), res.body, 'the same Lead as the PATCH answer');
    t.same(
      leadOf(data),
      (await (await f.h.request(`/v1/leads/${id}`, { key: f.h.ws.live })).json()) as Record<string, unknown>,
      'and as GET /v1/leads/{id}',
    );

    const noteRevision = await lastRevision(f, id);
    t.equal((await patch(f, id, { note: 'Sent the checklist' })).status, 200);
    t.same(
      (await deliveredSince(f, id)).map((r) => r.headers['x-service-event']),
      [],
      'a note alone delivers no lead event (lead.note_added is internal)',
    );
    t.same(await publicEventsAfter(f, id, noteRevision), [], 'and appends no public event');

    t.equal((await patch(f, id, { temperature: 'warm', stage_key: 'contacted' })).status, 200);
    t.same(
      (await deliveredSince(f, id)).map((r) => r.headers['x-service-event']),
      [],
      'a PATCH that changes nothing delivers nothing',
    );
  },
);

t.test('a PATCH of owner_email delivers lead.assigned only; a move to lost delivers lead.lost only', async (t) => {
  const f = await fixture(t);
  const { id, lead: before } = await createLead(t, f);
  f.clock.advance(1000);

  let revision = await lastRevision(f, id);
  const assigned = await patch(f, id, { owner_email: 'Asha@Northstar.example' });
  t.equal(assigned.status, 200);
  const [assignedEvent] = await deliveredInOrder(t, f, id, revision, ['lead.assigned']);
  const owner = assignedEvent!.data.owner as Record<string, unknown>;
  t.same(
    Object.keys(assignedEvent!.data).sort(),
    [...LEAD_FIELDS].sort(),
    'data is the Lead: every field, no others (no changed_fields, no previous_owner)',
  );
  t.match(owner, { id: UUID, name: 'Asha Rao', email: 'asha@northstar.example' }, 'the Lead carries the new owner');
  t.same(Object.keys(owner).sort(), ['email', 'id', 'name']);
  let at = f.clock.now().toISOString();
  t.same(
    assignedEvent!.data,
    { ...before, owner, updated_at: at, last_activity_at: at },
    'only the owner and the times moved',
  );
  t.same(assignedEvent!.data, assigned.body, 'the same Lead as the PATCH answer');

  f.clock.advance(1000);
  revision = await lastRevision(f, id);
  const lost = await patch(f, id, { stage_key: 'lost', lost_reason_key: 'chose_competitor' });
  t.equal(lost.status, 200);
  const [lostEvent] = await deliveredInOrder(t, f, id, revision, ['lead.lost']);
  t.same(
    Object.keys(lostEvent!.data).sort(),
    [...LEAD_FIELDS].sort(),
    'data is the Lead: every field, no others (no previous_stage)',
  );
  at = f.clock.now().toISOString();
  t.same(
    lostEvent!.data,
    {
      ...assigned.body,
      stage: { key: 'lost', name: 'Lost' },
      lost_reason: { key: 'chose_competitor', name: 'Chose a competitor' },
      stage_changed_at: at,
      updated_at: at,
      last_activity_at: at,
    },
    'the Lead in the lost stage with its lost reason',
  );
  t.same(lostEvent!.data, lost.body, 'the same Lead as the PATCH answer');
});

t.test(
  'one PATCH changing a field, the owner and moving to lost delivers lead.updated, lead.assigned, lead.lost in order, each with the Lead after it',
  async (t) => {
    const f = await fixture(t);
    const { id, lead: before } = await createLead(t, f);
    f.clock.advance(1000);
    const revision = await lastRevision(f, id);

    const res = await patch(f, id, {
      temperature: 'hot',
      owner_email: 'asha@northstar.example',
      stage_key: 'lost',
      lost_reason_key: 'not_eligible',
      note: 'Not eligible this year',
    });
    t.equal(res.status, 200);
    const [updated, assigned, lost] = await deliveredInOrder(t, f, id, revision, [
      'lead.updated',
      'lead.assigned',
      'lead.lost',
    ]);
    const at = f.clock.now().toISOString();
    const times = { updated_at: at, last_activity_at: at };

    t.same(
      updated!.data.changed_fields,
      ['temperature'],
      'lead.updated names only the field it changed: not the owner, not the move to lost',
    );
    const afterUpdate = { ...before, temperature: 'hot', ...times };
    t.same(
      leadOf(updated!.data),
      afterUpdate,
      'lead.updated: the Lead with the new temperature, the old owner and stage',
    );

    t.same(Object.keys(assigned!.data).sort(), [...LEAD_FIELDS].sort());
    const afterAssign = { ...afterUpdate, owner: assigned!.data.owner };
    t.match(assigned!.data.owner, { name: 'Asha Rao', email: 'asha@northstar.example' });
    t.same(assigned!.data, afterAssign, 'lead.assigned: the Lead with the new owner, still in its old stage');

    t.same(Object.keys(lost!.data).sort(), [...LEAD_FIELDS].sort());
    t.same(
      lost!.data,
      {
        ...afterAssign,
        stage: { key: 'lost', name: 'Lost' },
        lost_reason: { key: 'not_eligible', name: 'Not eligible' },
        stage_changed_at: at,
      },
      'lead.lost: the Lead as it ends',
    );
    t.same(lost!.data, res.body, 'which is the PATCH answer');
  },
);
