/**
 * Money as integers in minor units of an ISO 4217 currency: no floating point anywhere. The exponent of a currency
 * comes from the ICU data Node ships (Intl), which follows ISO 4217 and is updated with Node, not from a table here.
 */

/** The largest amount accepted anywhere, in minor units (far below 2^53, so sums of a few stay exact). */
export const MAX_AMOUNT = 1_000_000_000_000;

const SUPPORTED: ReadonlySet<string> = new Set(Intl.supportedValuesOf('currency'));

export const isCurrency = (code: string): boolean => SUPPORTED.has(code);

/** Digits after the decimal point of a currency (2 for USD and INR, 0 for JPY, 3 for KWD). */
export function currencyExponent(code: string): number {
  if (!isCurrency(code)) throw new Error(`${code} is not an ISO 4217 currency`);
  return new Intl.NumberFormat('en', { style: 'currency', currency: code }).resolvedOptions().maximumFractionDigits!;
}

/** `a × b` exactly, for amounts whose product may pass 2^53. */
export const multiply = (a: number, b: number): bigint => BigInt(a) * BigInt(b);

/** `amount × basisPoints / 10000`, rounded half up, exactly (integer arithmetic on BigInt). */
export function applyBasisPoints(amount: number, basisPoints: number): bigint {
  return (BigInt(amount) * BigInt(basisPoints) + 5000n) / 10000n;
}

/** Sums integers exactly. */
export const sum = (values: readonly (number | bigint)[]): bigint => values.reduce<bigint>((a, v) => a + BigInt(v), 0n);

/** An amount in minor units as text in major units, for messages: 123456 USD → "1234.56 USD". */
export function formatMinor(amount: number, currency: string): string {
  const exponent = currencyExponent(currency);
  const digits = String(Math.abs(amount)).padStart(exponent + 1, '0');
  const major = exponent === 0 ? digits : `${digits.slice(0, -exponent)}.${digits.slice(-exponent)}`;
  return `${amount < 0 ? '-' : ''}${major} ${currency}`;
}
