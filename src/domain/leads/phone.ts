import { parsePhoneNumberFromString, type CountryCode } from 'libphonenumber-js/max';

/**
 * A phone number in E.164, read with the workspace's default country when it has no international prefix.
 * Undefined when the text is not a valid number for any country (checked against the full metadata).
 */
export function normalisePhone(input: string, defaultCountry: string): string | undefined {
  const parsed = parsePhoneNumberFromString(input, { defaultCountry: defaultCountry as CountryCode, extract: false });
  if (!parsed || !parsed.isValid()) return undefined;
  return parsed.number;
}
