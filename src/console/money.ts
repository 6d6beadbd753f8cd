import { currencyExponent, isCurrency, MAX_AMOUNT } from '../domain/invoices/money.js';

/** Minor units as the decimal text of major units, exactly (no floating point): 123456 with exponent 2 → "1234.56". */
function majorText(amount: number, exponent: number): string {
  const digits = String(Math.abs(amount)).padStart(exponent + 1, '0');
  const major = exponent === 0 ? digits : `${digits.slice(0, -exponent)}.${digits.slice(-exponent)}`;
  return `${amount < 0 ? '-' : ''}${major}`;
}

/** An amount in integer minor units shown in its currency's format (Intl.NumberFormat, given the exact decimal). */
export function formatMoney(amount: number, currency: string, locale = 'en-IN'): string {
  const format = new Intl.NumberFormat(locale, { style: 'currency', currency });
  // Intl.NumberFormat formats a decimal string exactly (ECMA-402 NumberFormat v3; Node 20).
  return format.format(majorText(amount, currencyExponent(currency)) as unknown as number);
}

/** A typed amount in major units ("1,234.50") as integer minor units, or why it is not one. */
export function parseMoney(text: string, currency: string, min = 1): number | string {
  if (!isCurrency(currency)) return 'Choose a currency.';
  const exponent = currencyExponent(currency);
  const cleaned = text.trim().replaceAll(',', '');
  const match = /^(\d{1,13})(?:\.(\d+))?$/.exec(cleaned);
  if (!match) return 'Enter an amount such as 1500 or 1500.50.';
  const fraction = match[2] ?? '';
  if (fraction.length > exponent)
    return exponent === 0 ? `${currency} has no fractions.` : `${currency} has ${exponent} digits after the point.`;
  const minor = Number(match[1]) * 10 ** exponent + Number(fraction.padEnd(exponent, '0') || '0');
  if (!Number.isSafeInteger(minor) || minor > MAX_AMOUNT) return 'This amount is too large.';
  if (minor < min) return min > 0 ? 'Enter an amount above zero.' : 'Enter an amount.';
  return minor;
}
