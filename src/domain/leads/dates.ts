/** True for `YYYY-MM-DD` naming a real calendar day. */
export function isCalendarDate(value: string): boolean {
  const match = /^(\d{4})-(\d{2})-(\d{2})$/.exec(value);
  if (!match) return false;
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])];
  const date = new Date(Date.UTC(year, month - 1, day));
  return date.getUTCFullYear() === year && date.getUTCMonth() === month - 1 && date.getUTCDate() === day;
}

/** Today's date (UTC) as `YYYY-MM-DD`. */
export function utcDay(now: Date): string {
  return now.toISOString().slice(0, 10);
}

/** A problem with a date of birth, or undefined: a calendar day, not after today and at most 120 years ago. */
export function dateOfBirthProblem(value: string, now: Date): string | undefined {
  if (!isCalendarDate(value)) return 'must be a date YYYY-MM-DD';
  if (value > utcDay(now)) return 'cannot be in the future';
  const oldest = `${now.getUTCFullYear() - 120}${utcDay(now).slice(4)}`;
  if (value < oldest) return 'is more than 120 years ago';
  return undefined;
}

/** A problem with an English test date, or undefined: a calendar day, not after today (a score means it was taken). */
export function testDateProblem(value: string, now: Date): string | undefined {
  if (!isCalendarDate(value)) return 'must be a date YYYY-MM-DD';
  if (value > utcDay(now)) return 'cannot be in the future';
  return undefined;
}
