/** A workspace's time zone when none is set. */
export const DEFAULT_TIME_ZONE = 'UTC';

/**
 * Whether the name is UTC or an IANA Area/Location name (Asia/Kolkata) that Intl knows. Abbreviations Intl also
 * accepts (IST, EST) are refused: IST is India's, Ireland's or Israel's depending on who reads it.
 */
export function isTimeZone(name: string): boolean {
  if (name !== DEFAULT_TIME_ZONE && !/^[A-Za-z]+\/[A-Za-z0-9_+\-/]{1,60}$/.test(name)) return false;
  try {
    new Intl.DateTimeFormat('en-GB', { timeZone: name });
    return true;
  } catch {
    return false;
  }
}

/**
 * Today's names of zones that Node 20's ICU lists under their older name (Asia/Calcutta for Asia/Kolkata): both are
 * offered, so staff find the name they know.
 */
const RENAMED = ['Asia/Kolkata', 'Asia/Kathmandu', 'Asia/Ho_Chi_Minh', 'Asia/Yangon', 'Europe/Kyiv', 'America/Nuuk'];

/** The zones a workspace may choose from: UTC first, then every name Intl knows, sorted. */
export function timeZones(): string[] {
  const names = new Set([...Intl.supportedValuesOf('timeZone'), ...RENAMED.filter(isTimeZone)]);
  names.delete(DEFAULT_TIME_ZONE);
  return [DEFAULT_TIME_ZONE, ...[...names].sort()];
}
