import fc from 'fast-check';
import t from 'tap';
import { isFormDate, isFormDateTimeLocal } from '../../src/console/schemas.js';
import { checkProperty } from '../support/properties.js';

const pad = (n: number, width = 2) => String(n).padStart(width, '0');

/** The model: a day and time exist when JavaScript's calendar gives back the same fields. */
function exists(year: number, month: number, day: number, hour = 0, minute = 0): boolean {
  const at = new Date(0);
  at.setUTCFullYear(year, month - 1, day);
  at.setUTCHours(hour, minute, 0, 0);
  return (
    year >= 1 &&
    at.getUTCFullYear() === year &&
    at.getUTCMonth() === month - 1 &&
    at.getUTCDate() === day &&
    at.getUTCHours() === hour &&
    at.getUTCMinutes() === minute &&
    hour < 24 &&
    minute < 60
  );
}

t.test('form dates and datetime-local values are accepted exactly when they name a real day and time', async (t) => {
  const parts = fc.record({
    year: fc.integer({ min: 0, max: 9999 }),
    month: fc.integer({ min: 0, max: 99 }),
    day: fc.integer({ min: 0, max: 99 }),
    hour: fc.integer({ min: 0, max: 99 }),
    minute: fc.integer({ min: 0, max: 99 }),
  });
  await checkProperty(
    t,
    'yyyy-mm-dd and yyyy-mm-ddThh:mm against the calendar',
    fc.property(parts, ({ year, month, day, hour, minute }) => {
      const date = `${pad(year, 4)}-${pad(month)}-${pad(day)}`;
      const local = `${date}T${pad(hour)}:${pad(minute)}`;
      return (
        isFormDate(date) === exists(year, month, day) &&
        isFormDateTimeLocal(local) === exists(year, month, day, hour, minute)
      );
    }),
    2_000,
  );
  for (const refused of [
    '2026-13-45T99:99',
    '2026-02-29T10:00',
    '2026-11-26T24:00',
    '2026-11-26 10:00',
    '2026-11-26T10:00Z',
  ])
    t.notOk(isFormDateTimeLocal(refused), `${refused} is refused`);
  for (const accepted of ['2028-02-29T23:59', '2026-11-26T09:30', '2026-11-26T09:30:15'])
    t.ok(isFormDateTimeLocal(accepted), `${accepted} is accepted`);
  t.notOk(isFormDate('2026-1-5'), 'a date needs its zeros');
});
