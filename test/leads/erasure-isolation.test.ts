import fc from 'fast-check';
import t from 'tap';
import { appFixture } from '../applications/support.js';
import { checkProperty, goodText } from '../support/properties.js';

// Erasing some leads never changes another's data: neither its read model nor its events as read back.

const person = fc.record({
  full_name: goodText(40).filter((s) => s.trim().length > 0),
  city: fc.option(goodText(40)),
  message: fc.option(
    goodText(80).filter((s) => s.trim().length > 0),
    { nil: undefined },
  ),
});

t.test('property: erasing any subset of leads leaves every other lead exactly as it was', async (t) => {
  const f = await appFixture(t);
  let serial = 0;
  await checkProperty(
    t,
    'erasure isolation',
    fc.asyncProperty(
      fc.array(person, { minLength: 2, maxLength: 4 }),
      fc.array(fc.boolean(), { minLength: 4, maxLength: 4 }),
      async (people, erase) => {
        const ids: string[] = [];
        for (const p of people) {
          serial += 1;
          const response = await f.app.request('/v1/leads', {
            method: 'POST',
            key: f.ws.live,
            json: {
              ...p,
              phone: `+9198${String(serial).padStart(8, '0')}`,
              email: `iso-${serial}@example.org`,
              consent: true,
            },
          });
          if (response.status !== 201) throw new Error(`create answered ${response.status}: ${await response.text()}`);
          ids.push(((await response.json()) as { id: string }).id);
        }
        const before = await Promise.all(ids.map((id) => snapshot(id)));
        for (const [i, id] of ids.entries()) {
          if (!erase[i]) continue;
          const answer = await f.admin(`/leads/${id}/erase`, { method: 'POST' });
          if (answer.status !== 200) throw new Error(`erase answered ${answer.status}`);
        }
        for (const [i, id] of ids.entries()) {
          const after = await snapshot(id);
          if (erase[i]) {
            if (after.lead.full_name !== '' || after.lead.phone !== null) return false;
          } else if (JSON.stringify(after) !== JSON.stringify(before[i])) return false;
        }
        return true;
      },
    ),
    12,
  );

  async function snapshot(id: string): Promise<{ lead: Record<string, unknown>; events: unknown[] }> {
    const lead = (await (await f.app.request(`/v1/leads/${id}`, { key: f.ws.live })).json()) as Record<string, unknown>;
    const events = (await f.app.services.store.readStream(`lead-${id}`)).map((e) => e.data);
    return { lead, events };
  }
});
