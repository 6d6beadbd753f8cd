import { DEFAULT_TIME_ZONE } from '../shared/time-zones.js';
import { html, type Html } from './html.js';

export { DEFAULT_TIME_ZONE, isTimeZone, timeZones } from '../shared/time-zones.js';

/**
 * The console's times in the workspace's time zone (an IANA name; UTC when none is set). Shown as
 * "2026-11-27 14:30 IST" in a `<time datetime>` holding the UTC instant, which a hover shows too; typed as wall
 * times of that zone (a `datetime-local` value) and read back to the instant they name.
 */
const formatters = new Map<string, Intl.DateTimeFormat>();

/** One cached formatter per zone: the wall time's parts, 24-hour, and the zone's short name. */
function formatterOf(zone: string): Intl.DateTimeFormat {
  let f = formatters.get(zone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-GB', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
      timeZoneName: 'short',
    });
    formatters.set(zone, f);
  }
  return f;
}

/** A wall-clock time in some zone, to the minute (seconds kept when given). */
export interface WallTime {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
}

interface Reading extends WallTime {
  zoneName: string;
}

function readingOf(instant: Date, zone: string): Reading {
  const parts: Record<string, string> = {};
  for (const p of formatterOf(zone).formatToParts(instant)) parts[p.type] = p.value;
  return {
    year: Number(parts.year),
    month: Number(parts.month),
    day: Number(parts.day),
    hour: Number(parts.hour),
    minute: Number(parts.minute),
    second: Number(parts.second),
    zoneName: parts.timeZoneName ?? zone,
  };
}

/** The wall time an instant shows in the zone. */
export function wallTimeOf(instant: Date, zone: string): WallTime {
  const { zoneName: _zoneName, ...wall } = readingOf(instant, zone);
  return wall;
}

/** The wall time read as if it were UTC, in milliseconds: the arithmetic base of the conversions. */
const asUtc = (w: WallTime) => Date.UTC(w.year, w.month - 1, w.day, w.hour, w.minute, w.second);

/** The zone's offset from UTC at an instant, in milliseconds (whole seconds). */
export function offsetAt(instant: Date, zone: string): number {
  const at = Math.floor(instant.getTime() / 1000) * 1000;
  return asUtc(wallTimeOf(new Date(at), zone)) - at;
}

const DAY_MS = 86_400_000;

/**
 * The instant a wall time of the zone names. Where the clocks go back (an overlap) the wall time happens twice: the
 * earlier instant is taken. Where they go forward (a gap) it never happens: it is read with the offset in force
 * before the gap, so 02:30 in a gap from 02:00 to 03:00 is the instant the clocks show as 03:30 (the rule of
 * JavaScript's Temporal, `disambiguation: 'compatible'`). No offset changes twice within two days anywhere.
 */
export function instantOf(wall: WallTime, zone: string): Date {
  const base = asUtc(wall);
  const before = offsetAt(new Date(base - DAY_MS), zone);
  const after = offsetAt(new Date(base + DAY_MS), zone);
  const candidates = [...new Set([base - before, base - after])]
    .sort((a, b) => a - b)
    .filter((t) => asUtc(wallTimeOf(new Date(t), zone)) === base);
  return new Date(candidates[0] ?? base - before);
}

const pad = (n: number, width = 2) => String(n).padStart(width, '0');

/** `yyyy-mm-dd` of a wall time. */
export const dateText = (w: Pick<WallTime, 'year' | 'month' | 'day'>) =>
  `${pad(w.year, 4)}-${pad(w.month)}-${pad(w.day)}`;

/** `yyyy-mm-ddThh:mm` of a wall time, the value a `datetime-local` input holds. */
export const localInputText = (w: WallTime) => `${dateText(w)}T${pad(w.hour)}:${pad(w.minute)}`;

/** A moment as a `datetime-local` input shows it in the zone ('' for none). */
export function inputValue(iso: string | Date | null | undefined, zone: string): string {
  return iso ? localInputText(wallTimeOf(new Date(iso), zone)) : '';
}

/** The moment's UTC instant as the `datetime` attribute and the hover text carry it. */
const utcText = (at: Date) => `${at.toISOString().slice(0, 16).replace('T', ' ')} UTC`;

/** A moment as the console shows it: the wall time in the zone with the zone's short name, the UTC instant kept. */
export function when(iso: string | Date | null | undefined, zone: string): Html | string {
  if (!iso) return '—';
  const at = new Date(iso);
  if (Number.isNaN(at.getTime())) return '—';
  const r = readingOf(at, zone);
  return html`<time datetime="${at.toISOString()}" title="${utcText(at)}"
    >${dateText(r)} ${pad(r.hour)}:${pad(r.minute)} ${r.zoneName}</time
  >`;
}

/** A date alone (a day of the zone) in the same element, e.g. for a follow-up shown by its day. */
export function dayWhen(iso: string | Date, zone: string): Html {
  const at = new Date(iso);
  return html`<time datetime="${at.toISOString()}" title="${utcText(at)}">${dateText(wallTimeOf(at, zone))}</time>`;
}

const LOCAL_INPUT = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,3}))?)?$/;

/**
 * A date and time typed into a form, read in the zone (what a `datetime-local` input sends), or the sentence saying
 * what is wrong with it. A value ending in Z (or an offset) is an instant already and is taken as such.
 */
export function momentOf(value: string, zone: string): Date | string {
  const example = 'such as 2026-11-26T09:30';
  if (/(Z|[+-]\d{2}:\d{2})$/.test(value) && /^\d{4}-\d{2}-\d{2}T/.test(value)) {
    const at = new Date(value);
    return Number.isNaN(at.getTime()) ? 'Enter a date and time that exists.' : at;
  }
  const m = LOCAL_INPUT.exec(value);
  if (!m) return `Enter a date and time (${zone}), ${example}.`;
  const wall = {
    year: Number(m[1]),
    month: Number(m[2]),
    day: Number(m[3]),
    hour: Number(m[4]),
    minute: Number(m[5]),
    second: Number(m[6] ?? 0),
  };
  if (!wallTimeExists(wall)) return 'Enter a date and time that exists.';
  const milliseconds = Number((m[7] ?? '').padEnd(3, '0'));
  return new Date(instantOf(wall, zone).getTime() + milliseconds);
}

/** A calendar date and clock time that exist (no 31 April, no 24:00). */
function wallTimeExists(w: WallTime): boolean {
  const d = new Date(asUtc(w));
  return (
    w.hour < 24 &&
    w.minute < 60 &&
    w.second < 60 &&
    d.getUTCFullYear() === w.year &&
    d.getUTCMonth() + 1 === w.month &&
    d.getUTCDate() === w.day
  );
}

/** The day of the zone an instant falls on, as the first and the next day's first instants (a day may be 23 or 25 h). */
export function dayAround(instant: Date, zone: string): { start: Date; end: Date; date: string } {
  const w = wallTimeOf(instant, zone);
  const midnight = (y: number, m: number, d: number) => {
    const next = new Date(Date.UTC(y, m - 1, d));
    return instantOf(
      {
        year: next.getUTCFullYear(),
        month: next.getUTCMonth() + 1,
        day: next.getUTCDate(),
        hour: 0,
        minute: 0,
        second: 0,
      },
      zone,
    );
  };
  return { start: midnight(w.year, w.month, w.day), end: midnight(w.year, w.month, w.day + 1), date: dateText(w) };
}

/** The zone a workspace shows and reads times in. */
export const timeZoneOf = (workspace: { settings: { time_zone?: string } }) =>
  workspace.settings.time_zone ?? DEFAULT_TIME_ZONE;

/**
 * A date typed into a filter (`yyyy-mm-dd`) as the instant its day starts in the zone; with `endOfDay`, the next
 * day's start (a "to" date includes its whole day). Empty: none; not a date: 'invalid'.
 */
export function dayBound(value: string | undefined, zone: string, endOfDay: boolean): Date | 'invalid' | undefined {
  if (!value) return undefined;
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(value);
  if (!m) return 'invalid';
  const wall = { year: Number(m[1]), month: Number(m[2]), day: Number(m[3]), hour: 0, minute: 0, second: 0 };
  if (!wallTimeExists(wall)) return 'invalid';
  const day = new Date(Date.UTC(wall.year, wall.month - 1, wall.day + (endOfDay ? 1 : 0)));
  return instantOf({ ...wall, year: day.getUTCFullYear(), month: day.getUTCMonth() + 1, day: day.getUTCDate() }, zone);
}

/**
 * What a precise `datetime-local` input (seconds and milliseconds) shows for a moment given in a link: an instant
 * (with Z or an offset) as the zone's wall time; anything else as it was typed.
 */
export function preciseInputValue(text: string | undefined, zone: string): string {
  if (!text || !/(Z|[+-]\d{2}:\d{2})$/.test(text)) return text ?? '';
  const at = new Date(text);
  if (Number.isNaN(at.getTime())) return text;
  const w = wallTimeOf(at, zone);
  return `${localInputText(w)}:${pad(w.second)}.${pad(at.getUTCMilliseconds(), 3)}`;
}
