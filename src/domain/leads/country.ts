const regions = new Intl.DisplayNames(['en'], { type: 'region' });
// ICU knows some codes that are not assigned ISO 3166-1 countries: groupings, pseudo-regions and "unknown".
const NOT_COUNTRIES = new Set(['EU', 'EZ', 'UN', 'QO', 'XA', 'XB', 'ZZ']);

/** The ISO 3166-1 alpha-2 code in upper case, or undefined when the text is not one. */
const known = new Map<string, boolean>();

export function normaliseCountry(input: string): string | undefined {
  const code = input.trim().toUpperCase();
  if (!/^[A-Z]{2}$/.test(code) || NOT_COUNTRIES.has(code)) return undefined;
  let isCountry = known.get(code);
  if (isCountry === undefined) {
    // Intl's region names are slow to ask; there are at most 676 two-letter codes.
    const name = regions.of(code);
    isCountry = Boolean(name && name !== code && name !== 'Unknown Region');
    known.set(code, isCountry);
  }
  return isCountry ? code : undefined;
}
