import fc from 'fast-check';
import t from 'tap';
import {
  dayAround,
  dayBound,
  inputValue,
  instantOf,
  isTimeZone,
  momentOf,
  preciseInputValue,
  offsetAt,
  timeZones,
  wallTimeOf,
  when,
  type WallTime,
} from '../../src/console/time.js';
import { checkProperty } from '../support/properties.js';

const ZONES = timeZones();
const MINUTE = 60_000;
// 1980 to 2037: every zone's offset a whole quarter hour (older local mean times have odd seconds).
const FROM = Date.UTC(1980, 0, 1);
const TO = Date.UTC(2037, 11, 31);
const QUARTER = 15 * MINUTE;

const asUtc = (w: WallTime) => Date.UTC(w.year, w.month - 1, w.day, w.hour, w.minute, w.second);

/**
 * The oracle, independent of instantOf's method: every instant whose wall time in the zone is `w`, found by trying
 * each offset a zone can have (a quarter hour apart, -14 h to +14 h).
 */
function instantsShowing(w: WallTime, zone: string): number[] {
  const base = asUtc(w);
  const found: number[] = [];
  for (let offset = -14 * 4; offset <= 14 * 4; offset++) {
    const at = base - offset * QUARTER;
    if (asUtc(wallTimeOf(new Date(at), zone)) === base) found.push(at);
  }
  return found.sort((a, b) => a - b);
}

const zone = fc.constantFrom(...ZONES);
const minuteInstant = fc.integer({ min: FROM / MINUTE, max: TO / MINUTE }).map((m) => new Date(m * MINUTE));
const wallTime = fc
  .record({
    year: fc.integer({ min: 1980, max: 2037 }),
    month: fc.integer({ min: 1, max: 12 }),
    day: fc.integer({ min: 1, max: 28 }),
    hour: fc.integer({ min: 0, max: 23 }),
    minute: fc.integer({ min: 0, max: 59 }),
  })
  .map((w) => ({ ...w, second: 0 }));
// Wall times near a transition of the zone, where the gaps and overlaps are: the hour either side of the instant
// where the offset of a random day changes (found by bisection), else a random wall time.
const nearTransition = fc.tuple(zone, minuteInstant, fc.integer({ min: -90, max: 90 })).map(([z, day, shift]) => {
  let lo = day.getTime();
  let hi = lo + 200 * 86_400_000;
  if (offsetAt(new Date(lo), z) === offsetAt(new Date(hi), z)) return { zone: z, wall: wallTimeOf(day, z) };
  while (hi - lo > MINUTE) {
    const mid = Math.floor((lo + hi) / 2 / MINUTE) * MINUTE;
    if (offsetAt(new Date(mid), z) === offsetAt(new Date(lo), z)) lo = mid;
    else hi = mid;
  }
  return { zone: z, wall: wallTimeOf(new Date(hi + shift * MINUTE), z) };
});

t.test('an instant shown in a zone and read back is the same instant, or its twin an hour earlier', async (t) => {
  await checkProperty(
    t,
    'instant → wall time → instant',
    fc.property(zone, minuteInstant, (z, at) => {
      const wall = wallTimeOf(at, z);
      const back = instantOf(wall, z);
      const all = instantsShowing(wall, z);
      if (!all.includes(at.getTime())) throw new Error(`the oracle misses ${at.toISOString()} in ${z}`);
      // An overlap's wall time names its earlier instant.
      if (back.getTime() !== all[0]) throw new Error(`${at.toISOString()} in ${z}: read back as ${back.toISOString()}`);
      if (asUtc(wallTimeOf(back, z)) !== asUtc(wall)) throw new Error('the wall time changed');
    }),
    400,
  );
});

t.test('a wall time read in a zone shows itself again, or is moved past a gap by its length', async (t) => {
  const check = (z: string, wall: WallTime) => {
    const at = instantOf(wall, z);
    const shown = asUtc(wallTimeOf(at, z));
    const all = instantsShowing(wall, z);
    if (all.length > 0) {
      if (at.getTime() !== all[0]) throw new Error(`${JSON.stringify(wall)} in ${z}: not its earliest instant`);
      return;
    }
    // A gap: the wall time is read with the offset before it, so it shows later by the gap's length.
    const gap = offsetAt(new Date(at.getTime() + 86_400_000), z) - offsetAt(new Date(at.getTime() - 86_400_000), z);
    if (gap <= 0 || shown - asUtc(wall) !== gap)
      throw new Error(`${JSON.stringify(wall)} in ${z}: shown ${new Date(shown).toISOString()}, gap ${gap}`);
  };
  await checkProperty(
    t,
    'wall time → instant → wall time (random)',
    fc.property(zone, wallTime, (z, w) => check(z, w)),
    300,
  );
  await checkProperty(
    t,
    'wall time → instant → wall time (around a transition)',
    fc.property(nearTransition, ({ zone: z, wall }) => check(z, wall)),
    300,
  );
});

t.test('the daylight-saving cases, by hand', async (t) => {
  const read = (value: string, z: string) => (momentOf(value, z) as Date).toISOString();
  // London springs forward at 01:00 UTC on 29 March 2026: 01:30 does not happen; it is read as 02:30 BST.
  t.equal(read('2026-03-29T01:30', 'Europe/London'), '2026-03-29T01:30:00.000Z', 'a gap: moved forward by an hour');
  // London falls back at 01:00 UTC on 25 October 2026: 01:30 happens twice; the first (BST) is taken.
  t.equal(read('2026-10-25T01:30', 'Europe/London'), '2026-10-25T00:30:00.000Z', 'an overlap: the earlier instant');
  t.equal(read('2026-11-27T09:30', 'Asia/Kolkata'), '2026-11-27T04:00:00.000Z', 'a half-hour zone');
  t.equal(read('2026-11-27T09:30', 'UTC'), '2026-11-27T09:30:00.000Z');
  t.equal(read('2026-11-27T09:30Z', 'Asia/Kolkata'), '2026-11-27T09:30:00.000Z', 'an instant is taken as such');
  // Lord Howe moves by half an hour.
  t.equal(read('2026-10-04T02:15', 'Australia/Lord_Howe'), '2026-10-03T15:45:00.000Z', 'a half-hour gap');
  t.equal(momentOf('2026-02-30T10:00', 'UTC'), 'Enter a date and time that exists.');
  t.match(momentOf('tomorrow', 'Asia/Kolkata'), /Asia\/Kolkata/, 'the refusal names the zone read in');
  t.equal(inputValue('2026-11-27T04:00:00Z', 'Asia/Kolkata'), '2026-11-27T09:30', 'the input shows the wall time');
});

t.test('a moment shown: the wall time in the zone, the UTC instant in datetime and on hover', async (t) => {
  const shown = String(when('2026-11-27T04:00:00Z', 'Asia/Kolkata'));
  t.match(shown, /datetime="2026-11-27T04:00:00.000Z"/);
  t.match(shown, /title="2026-11-27 04:00 UTC"/);
  t.match(shown, />2026-11-27 09:30 (IST|GMT\+5:30)</);
  t.equal(when(null, 'UTC'), '—');
});

t.test("a zone's day: 23 or 25 hours on the days the clocks change", async (t) => {
  const spring = dayAround(new Date('2026-03-29T12:00:00Z'), 'Europe/London');
  t.equal(spring.start.toISOString(), '2026-03-29T00:00:00.000Z');
  t.equal(spring.end.getTime() - spring.start.getTime(), 23 * 3600_000);
  const autumn = dayAround(new Date('2026-10-25T12:00:00Z'), 'Europe/London');
  t.equal(autumn.end.getTime() - autumn.start.getTime(), 25 * 3600_000);
  const india = dayAround(new Date('2026-11-27T20:00:00Z'), 'Asia/Kolkata');
  t.equal(india.date, '2026-11-28', 'after 18:30 UTC it is tomorrow in India');
  t.equal(india.start.toISOString(), '2026-11-27T18:30:00.000Z');
  await checkProperty(
    t,
    'every instant falls within its day, whose start shows midnight',
    fc.property(zone, minuteInstant, (z, at) => {
      const day = dayAround(at, z);
      if (!(day.start <= at && at < day.end)) throw new Error(`${at.toISOString()} outside its day in ${z}`);
      const hours = (day.end.getTime() - day.start.getTime()) / 3600_000;
      if (hours < 22 || hours > 26) throw new Error(`a day of ${hours} hours in ${z}`);
    }),
    300,
  );
});

t.test('time zone names: what Intl knows, nothing else', async (t) => {
  for (const name of ['UTC', 'Asia/Kolkata', 'America/New_York', 'Australia/Lord_Howe']) t.ok(isTimeZone(name), name);
  for (const name of ['', 'Mars/Olympus', 'Asia/Kolkata; DROP', '../etc', 'x'.repeat(80)]) t.notOk(isTimeZone(name));
});

t.test("a filter's dates are the zone's days", async (t) => {
  t.equal(dayBound('2026-11-27', 'Asia/Kolkata', false)?.toString(), new Date('2026-11-26T18:30:00Z').toString());
  t.equal(dayBound('2026-11-27', 'Asia/Kolkata', true)?.toString(), new Date('2026-11-27T18:30:00Z').toString());
  t.equal(dayBound('2026-12-31', 'UTC', true)?.toString(), new Date('2027-01-01T00:00:00Z').toString(), 'a new year');
  t.equal(dayBound('2026-02-30', 'UTC', false), 'invalid');
  t.equal(dayBound('27/11/2026', 'UTC', false), 'invalid');
  t.equal(dayBound(undefined, 'UTC', false), undefined);
  await checkProperty(
    t,
    "a date's bounds are the start of its day and of the next",
    fc.property(zone, minuteInstant, (z, at) => {
      const day = dayAround(at, z);
      const from = dayBound(day.date, z, false);
      const to = dayBound(day.date, z, true);
      if (!(from instanceof Date) || from.getTime() !== day.start.getTime()) throw new Error(`${day.date} in ${z}`);
      if (!(to instanceof Date) || to.getTime() !== day.end.getTime()) throw new Error(`${day.date} end in ${z}`);
    }),
    200,
  );
});

t.test('every zone the settings page offers is one the definition accepts', async (t) => {
  const refused = timeZones().filter((zone) => !isTimeZone(zone));
  t.same(refused, [], `${timeZones().length} zones offered`);
  t.notOk(isTimeZone('IST'), 'an abbreviation Intl accepts is refused: it names three zones');
});

t.test("a link's instant in a precise datetime-local input, as the zone's wall time", async (t) => {
  t.equal(preciseInputValue('2026-11-27T04:00:05.123Z', 'Asia/Kolkata'), '2026-11-27T09:30:05.123');
  t.equal(preciseInputValue('2026-11-27T09:30', 'Asia/Kolkata'), '2026-11-27T09:30', 'typed: kept as typed');
  t.equal(preciseInputValue(undefined, 'UTC'), '');
  const back = momentOf(preciseInputValue('2026-03-29T00:59:59.999Z', 'Europe/London'), 'Europe/London');
  t.equal((back as Date).toISOString(), '2026-03-29T00:59:59.999Z', 'read back to the same instant');
});
