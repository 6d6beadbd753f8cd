import t from 'tap';
import { webhookHarness } from './support/harness.js';

/** The events and deliveries queries at their edges: numbers past what is kept, unknown orders, empty windows. */
t.test('sequence_gte past any number the service keeps: 400 naming it, not a 500', async (t) => {
  const h = await webhookHarness(t);
  const { id } = await h.createEndpoint({ url: h.receiver.url('localhost'), events: ['lead.created'] });
  for (const value of ['99999999999999999999', '9007199254740992', '1e30', '0', '-1']) {
    const answer = await h.request(`/v1/webhooks/${id}/deliveries?sequence_gte=${value}`, { key: h.ws.live });
    t.equal(answer.status, 400, `sequence_gte=${value}: 400`);
    t.match(await answer.json(), { error: 'validation_failed', fields: { sequence_gte: /^must be/ } });
  }
  const largest = await h.request(`/v1/webhooks/${id}/deliveries?sequence_gte=9007199254740991`, { key: h.ws.live });
  t.equal(largest.status, 200, 'the largest number accepted: a page');
  t.same(await largest.json(), { data: [], has_more: false }, 'with nothing on it');
});

t.test('an order that is not one lists the orders; an empty or reversed window is a 400', async (t) => {
  const h = await webhookHarness(t);
  const get = async (query: string) => {
    const answer = await h.request(`/v1/events?${query}`, { key: h.ws.live });
    return { status: answer.status, body: (await answer.json()) as Record<string, unknown> };
  };
  t.match(
    await get('order=sideways'),
    { status: 400, body: { error: 'validation_failed', fields: { order: 'must be one of: desc, asc' } } },
    'order=sideways names the allowed values',
  );
  const windows: [string, string][] = [
    ['2026-11-02T00:00:00Z', '2026-11-01T00:00:00Z'],
    ['2026-11-01T00:00:00Z', '2026-11-01T00:00:00Z'],
    ['2026-11-01T05:30:00+05:30', '2026-11-01T00:00:00.000Z'],
  ];
  for (const [gte, lt] of windows) {
    const answer = await get(`created[gte]=${encodeURIComponent(gte)}&created[lt]=${encodeURIComponent(lt)}`);
    t.match(
      answer,
      { status: 400, body: { error: 'validation_failed', fields: { 'created[lt]': /^must be after created\[gte\]/ } } },
      `created[gte]=${gte} and created[lt]=${lt}: a window that holds nothing`,
    );
  }
  const window = await get('created[gte]=2026-11-01T00:00:00Z&created[lt]=2026-11-01T00:00:00.001Z');
  t.equal(window.status, 200, 'a window of one millisecond is a page');
});
