/** A moment as the console shows it. */
export const when = (iso: string | Date | null | undefined) =>
  iso ? new Date(iso).toISOString().replace('T', ' ').slice(0, 16) + ' UTC' : '—';

/** A date and time typed into a form (UTC), or the sentence saying what is wrong with it. */
export function momentOf(value: string): Date | string {
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?Z?$/.test(value))
    return 'Enter a date and time (UTC), such as 2026-11-26T09:30.';
  const at = new Date(value.endsWith('Z') ? value : `${value}Z`);
  return Number.isNaN(at.getTime()) ? 'Enter a date and time that exists.' : at;
}
