import fc from 'fast-check';
import t from 'tap';
import { Value } from 'typebox/value';
import { STREAM_KINDS } from '../../src/domain/streams.js';
import { EVENT_KINDS } from '../../src/shared/enums.js';
import {
  CHANGELOG,
  ENVELOPE_SCHEMAS,
  PAYLOAD_VERSIONS,
  renderAllVersions,
  renderEnvelope,
  STEPS_DOWN,
  type RenderableEvent,
} from '../../src/webhooks/versions/index.js';
import { checkProperty } from '../support/properties.js';

// Every payload version's rendering of any event of any kind, checked against that version's envelope schema, and
// each version step checked against the renderings it connects. No database: the renderers are plain functions.

const jsonObject = fc.dictionary(
  fc.string({ maxLength: 12 }),
  fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.parse(JSON.stringify(v)) as unknown),
  { maxKeys: 6 },
);

const streamName = fc.oneof(
  fc.tuple(fc.constantFrom(...STREAM_KINDS), fc.uuid({ version: 4 })).map(([kind, id]) => `${kind}-${id}`),
  fc.uuid({ version: 4 }).map((id) => `webhook-test-resource-${id}`),
);

const webhookEvent: fc.Arbitrary<RenderableEvent & { payload: Record<string, unknown> }> = fc
  .record({
    id: fc.uuid({ version: 4 }),
    type: fc.constantFrom(...EVENT_KINDS),
    tenantId: fc.uuid({ version: 4 }),
    createdAt: fc.date({ min: new Date('2000-01-01'), max: new Date('2099-12-31'), noInvalidDate: true }),
    streamId: streamName,
    revision: fc.integer({ min: 0, max: 2_000_000 }),
    payload: jsonObject,
    beside: jsonObject,
  })
  .map(({ payload, beside, ...event }) => ({ ...event, payload, data: { ...beside, payload } }));

t.test('any event of any kind, rendered at every version, is that version’s envelope', async (t) => {
  await checkProperty(
    t,
    'every version validates',
    fc.property(webhookEvent, (event) => {
      const all = renderAllVersions(event);
      if (all === null) throw new Error('a webhook event with a payload rendered nothing');
      for (const version of PAYLOAD_VERSIONS) {
        const text = renderEnvelope(event, version);
        if (text !== all[version]) throw new Error(`${version}: one rendering and all renderings differ`);
        const body = JSON.parse(text) as Record<string, unknown>;
        if (!Value.Check(ENVELOPE_SCHEMAS[version], body))
          throw new Error(`${version}: ${JSON.stringify([...Value.Errors(ENVELOPE_SCHEMAS[version], body)][0])}`);
        if (JSON.stringify(body.data) !== JSON.stringify(event.payload)) throw new Error(`${version}: data changed`);
        if (body.id !== event.id || body.event !== event.type) throw new Error(`${version}: id or kind changed`);
      }
      const current = JSON.parse(all['2026-11-29']) as { resource: { id: string; version: number } };
      if (current.resource.version !== event.revision + 1) throw new Error('the resource version is not its position');
      if (!event.streamId.endsWith(current.resource.id)) throw new Error('the resource id is not its stream’s');
    }),
    300,
  );
});

t.test('each step takes a version’s envelope to exactly the version before’s', async (t) => {
  await checkProperty(
    t,
    'steps connect the renderings',
    fc.property(webhookEvent, (event) => {
      const newer = renderEnvelope(event, '2026-11-29')!;
      const older = renderEnvelope(event, '2026-11-22')!;
      const stepped = JSON.stringify(STEPS_DOWN['2026-11-29'](JSON.parse(newer) as never));
      if (stepped !== older) throw new Error(`stepped ${stepped}\nrendered ${older}`);
    }),
    200,
  );
});

t.test('version 2026-11-22 is the envelope of the spec, byte for byte as before versions existed', async (t) => {
  const event = {
    id: '0b0c1d2e-3f40-4152-8364-758697a8b9ca',
    type: 'lead.updated',
    tenantId: '1c2d3e4f-5061-4728-9394-a5b6c7d8e9f0',
    createdAt: new Date('2026-11-22T09:30:00.000Z'),
    streamId: 'lead-2d3e4f50-6172-4839-8a4b-5c6d7e8f9012',
    revision: 6,
    data: { payload: { id: '2d3e4f50-6172-4839-8a4b-5c6d7e8f9012', full_name: 'Asha Rao' }, changed: ['stage'] },
  };
  t.equal(
    renderEnvelope(event, '2026-11-22'),
    '{"id":"0b0c1d2e-3f40-4152-8364-758697a8b9ca","event":"lead.updated","tenant_id":"1c2d3e4f-5061-4728-9394-a5b6c7d8e9f0","created_at":"2026-11-22T09:30:00.000Z","data":{"id":"2d3e4f50-6172-4839-8a4b-5c6d7e8f9012","full_name":"Asha Rao"}}',
  );
  t.same(JSON.parse(renderEnvelope(event, '2026-11-29')!), {
    id: event.id,
    event: 'lead.updated',
    tenant_id: event.tenantId,
    created_at: '2026-11-22T09:30:00.000Z',
    payload_version: '2026-11-29',
    resource: { type: 'lead', id: '2d3e4f50-6172-4839-8a4b-5c6d7e8f9012', version: 7 },
    data: event.data.payload,
  });
  t.same(
    JSON.parse(
      renderEnvelope(
        { ...event, type: 'payment.received', streamId: 'invoice-3e4f5061-7283-494a-9b5c-6d7e8f901234', revision: 2 },
        '2026-11-29',
      )!,
    ).resource,
    { type: 'invoice', id: '3e4f5061-7283-494a-9b5c-6d7e8f901234', version: 3 },
    'a payment is a change of its invoice',
  );
  t.equal(
    renderEnvelope({ ...event, type: 'lead.note_added' }, '2026-11-29'),
    null,
    'an internal event renders nothing',
  );
  t.equal(renderEnvelope({ ...event, data: {} }, '2026-11-22'), null, 'nor an event without a payload');
});

t.test('the changelog names every version once, newest first', async (t) => {
  t.same(
    CHANGELOG.map((entry) => entry.version),
    [...PAYLOAD_VERSIONS].reverse(),
  );
});
