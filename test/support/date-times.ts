import fc from 'fast-check';

// Date-times as their parts, and an oracle of what the service must accept them as.

// Howard Hinnant's days_from_civil: days since 1970-01-01 of a proleptic Gregorian date, without JavaScript's Date
// (whose two-digit years and leap handling are what is under test).
function daysFromCivil(year: number, month: number, day: number): number {
  const y = year - (month <= 2 ? 1 : 0);
  const era = Math.floor(y / 400);
  const yoe = y - era * 400;
  const doy = Math.floor((153 * (month + (month > 2 ? -3 : 9)) + 2) / 5) + day - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146097 + doe - 719468;
}
const DAY_MS = 86_400_000;
const FIRST = daysFromCivil(1, 1, 1) * DAY_MS;
const LAST = daysFromCivil(10000, 1, 1) * DAY_MS - 1;
const leap = (y: number) => y % 4 === 0 && (y % 100 !== 0 || y % 400 === 0);
const monthDays = (y: number, m: number) => [31, leap(y) ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][m - 1]!;

export interface DateTimeParts {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
  fraction: string | null;
  separator: string;
  zone:
    { kind: 'z'; letter: string } | { kind: 'offset'; sign: '+' | '-'; h: number; m: number; colon: boolean | null };
}

const pad = (n: number, width = 2) => String(n).padStart(width, '0');

export function renderDateTime(p: DateTimeParts): string {
  const zone =
    p.zone.kind === 'z'
      ? p.zone.letter
      : `${p.zone.sign}${pad(p.zone.h)}${p.zone.colon === null ? '' : `${p.zone.colon ? ':' : ''}${pad(p.zone.m)}`}`;
  return (
    `${pad(p.year, 4)}-${pad(p.month)}-${pad(p.day)}${p.separator}${pad(p.hour)}:${pad(p.minute)}:${pad(p.second)}` +
    `${p.fraction === null ? '' : `.${p.fraction}`}${zone}`
  );
}

/** The oracle: the instant the service must accept the parts as, or undefined when it must refuse them. */
export function expectedInstant(p: DateTimeParts): number | undefined {
  if (p.month < 1 || p.month > 12 || p.day < 1 || p.day > monthDays(p.year, p.month)) return undefined;
  if (p.hour > 23 || p.minute > 59 || p.second > 59) return undefined;
  if (p.fraction !== null && /[1-9]/.test(p.fraction.slice(3))) return undefined;
  let offset = 0;
  if (p.zone.kind === 'offset') {
    if (p.zone.colon === null || p.zone.h > 23 || p.zone.m > 59) return undefined;
    offset = (p.zone.sign === '-' ? -1 : 1) * (p.zone.h * 60 + p.zone.m) * 60_000;
  }
  const ms = p.fraction === null ? 0 : Number(p.fraction.slice(0, 3).padEnd(3, '0'));
  const instant =
    daysFromCivil(p.year, p.month, p.day) * DAY_MS + ((p.hour * 60 + p.minute) * 60 + p.second) * 1000 + ms - offset;
  return instant >= FIRST && instant <= LAST ? instant : undefined;
}

export const dateTimeParts: fc.Arbitrary<DateTimeParts> = fc.record({
  year: fc.oneof(fc.integer({ min: 0, max: 9999 }), fc.constantFrom(0, 1, 99, 100, 1900, 2000, 9999)),
  month: fc.integer({ min: 0, max: 13 }),
  day: fc.oneof(fc.integer({ min: 1, max: 28 }), fc.integer({ min: 0, max: 32 })),
  hour: fc.oneof(fc.integer({ min: 0, max: 23 }), fc.constantFrom(0, 23, 24)),
  minute: fc.oneof(fc.integer({ min: 0, max: 59 }), fc.constant(60)),
  second: fc.oneof(fc.integer({ min: 0, max: 59 }), fc.constantFrom(0, 59, 60)),
  fraction: fc.option(
    fc.oneof(
      fc.stringMatching(/^[0-9]{1,3}$/),
      fc.stringMatching(/^[0-9]{3}0{1,6}$/),
      fc.stringMatching(/^[0-9]{4,9}$/),
    ),
  ),
  separator: fc.constantFrom('T', 't', ' '),
  zone: fc.oneof(
    fc.record({ kind: fc.constant('z' as const), letter: fc.constantFrom('Z', 'z') }),
    fc.record({
      kind: fc.constant('offset' as const),
      sign: fc.constantFrom('+' as const, '-' as const),
      h: fc.oneof(fc.integer({ min: 0, max: 23 }), fc.constantFrom(0, 23, 24)),
      m: fc.oneof(fc.integer({ min: 0, max: 59 }), fc.constantFrom(0, 59, 60)),
      colon: fc.constantFrom(true, false, null),
    }),
  ),
});
