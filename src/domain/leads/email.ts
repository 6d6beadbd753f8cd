// One local part of printable ASCII without spaces, quotes or brackets, and a domain of dot-separated labels ending
// in a letters-only top-level label: what mail providers accept in sign-up forms, not the full RFC 5322 grammar.
const EMAIL =
  /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~.-]{1,64}@(?=.{4,253}$)(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,63}$/;

/** The address trimmed and lower-cased (so duplicates match however it was typed), or undefined when it is not one. */
export function normaliseEmail(input: string): string | undefined {
  const value = input.trim();
  if (!EMAIL.test(value)) return undefined;
  const [local] = value.split('@');
  if (local!.startsWith('.') || local!.endsWith('.') || local!.includes('..')) return undefined;
  return value.toLowerCase();
}
