import ipaddr from 'ipaddr.js';

/*
 * The allow-lists of an API key, checked the same way at every door that makes a key (console, CLI, demo keys):
 * createKey calls these, so a key never holds an entry its request check (src/http/auth.ts) cannot read and that would
 * refuse every request with 403 ip_not_allowed.
 */

/** A key refused, in words for the member or the operator, with the part of the request it is about. */
export class KeyRefusal extends Error {
  override name = 'KeyRefusal';
  readonly about: 'name' | 'scopes' | 'ips' | 'origins';
  constructor(message: string, about: 'name' | 'scopes' | 'ips' | 'origins' = 'name') {
    super(message);
    this.about = about;
  }
}

/** An address in its usual spelling: IPv4 as four decimal numbers up to 255 (not `10.1` or hex), or IPv6. */
function address(text: string): ipaddr.IPv4 | ipaddr.IPv6 | undefined {
  if (ipaddr.IPv4.isValidFourPartDecimal(text)) return ipaddr.IPv4.parse(text);
  if (text.includes(':') && ipaddr.IPv6.isValid(text)) return ipaddr.IPv6.parse(text);
  return undefined;
}

/** One entry of an IP allow-list, normalised (`10.0.0.0/8`, `2001:db8::/32`, `192.0.2.7`), or undefined if unreadable. */
export function ipEntry(entry: string): string | undefined {
  const [host, bits, extra] = entry.trim().split('/');
  if (extra !== undefined || !host) return undefined;
  const parsed = address(host);
  if (!parsed) return undefined;
  if (bits === undefined) return parsed.toString();
  const max = parsed.kind() === 'ipv4' ? 32 : 128;
  if (!/^\d{1,3}$/.test(bits) || Number(bits) > max) return undefined;
  return `${parsed.toString()}/${Number(bits)}`;
}

/** The IP allow-list normalised, duplicates dropped; every unreadable entry named in one refusal. */
export function checkedIpAllowlist(entries: readonly string[]): string[] {
  const wrong = entries.filter((e) => ipEntry(e) === undefined);
  if (wrong.length > 0)
    throw new KeyRefusal(
      `Not an IP address or range: ${wrong.map((e) => `"${e}"`).join(', ')}. Use addresses like 203.0.113.7 or 2001:db8::1, or ranges like 203.0.113.0/24.`,
      'ips',
    );
  return [...new Set(entries.map((e) => ipEntry(e)!))];
}

/** The origin of an http or https address (scheme://host[:port], as browsers send it), or undefined. */
export function originEntry(entry: string): string | undefined {
  let url: URL;
  try {
    url = new URL(entry.trim());
  } catch {
    return undefined;
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return undefined;
  // A page's address names its site: the path is dropped. Credentials belong to no origin a browser sends.
  if (url.username || url.password || !url.hostname) return undefined;
  return url.origin;
}

/** The origins normalised, duplicates dropped; every unreadable entry named in one refusal. */
export function checkedOrigins(entries: readonly string[]): string[] {
  const wrong = entries.filter((e) => originEntry(e) === undefined);
  if (wrong.length > 0)
    throw new KeyRefusal(
      `Not an origin: ${wrong.map((e) => `"${e}"`).join(', ')}. Use the site's address alone, like https://www.example.com.`,
      'origins',
    );
  return [...new Set(entries.map((e) => originEntry(e)!))];
}

/** Entries typed in one line, separated by commas or spaces. */
export function allowListEntries(text: string | undefined): string[] {
  return (text ?? '')
    .split(/[\s,]+/)
    .map((s) => s.trim())
    .filter(Boolean);
}
