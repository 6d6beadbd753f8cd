import dns from 'node:dns';
import net from 'node:net';
import ipaddr from 'ipaddr.js';

/** Resolves a host name to every address it has (A and AAAA), like getaddrinfo. Injectable for tests. */
export type Resolver = (hostname: string) => Promise<{ address: string; family: 4 | 6 }[]>;

export const systemResolver: Resolver = async (hostname) => {
  const found = await dns.promises.lookup(hostname, { all: true, verbatim: true });
  return found.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));
};

export interface GuardOptions {
  /** Test-only: lets loopback addresses through (config.webhookAllowLoopback). Every other internal range stays refused. */
  allowLoopback: boolean;
  resolve: Resolver;
}

export class RefusedAddressError extends Error {
  override name = 'RefusedAddressError';
}

/** A checked target: the host to name in TLS and Host, and the one address to connect to. */
export interface CheckedTarget {
  url: URL;
  hostname: string;
  port: number;
  address: string;
  family: 4 | 6;
}

// Global unicast IPv6 lives in 2000::/3; everything outside it (IPv4-compatible ::/96, unique local, link local,
// multicast, ...) is refused, and within it ipaddr.js names the special blocks (6to4, Teredo, NAT64, docs, ...).
const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR('2000::/3');

/** Why an address may not be reached, or null when it is a public unicast address. */
export function addressProblem(raw: string, allowLoopback: boolean): string | null {
  let parsed: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    parsed = ipaddr.parse(raw);
  } catch {
    return `${raw} is not an IP address`;
  }
  if (parsed.kind() === 'ipv6') {
    const v6 = parsed as ipaddr.IPv6;
    // IPv4-mapped (::ffff:a.b.c.d) reaches the IPv4 address inside it: judge that one.
    if (v6.isIPv4MappedAddress()) return addressProblem(v6.toIPv4Address().toString(), allowLoopback);
    const range = v6.range();
    if (range === 'loopback' && allowLoopback) return null;
    if (range !== 'unicast' || !v6.match(GLOBAL_UNICAST_V6))
      return `${raw} is in the ${range === 'unicast' ? 'non-global' : range} IPv6 range`;
    return null;
  }
  const range = (parsed as ipaddr.IPv4).range();
  if (range === 'loopback' && allowLoopback) return null;
  // 'unicast' is ipaddr.js's name for everything outside its special ranges (private, loopback, link-local, which
  // holds 169.254.169.254, carrier-grade NAT, which holds 100.100.100.200, multicast, reserved, ...).
  if (range !== 'unicast') return `${raw} is in the ${range} IPv4 range`;
  return null;
}

/** Static checks on a webhook URL: public HTTPS, no credentials. Returns the parsed URL. */
export function parseWebhookUrl(raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new RefusedAddressError('must be an absolute URL');
  }
  if (url.protocol !== 'https:') throw new RefusedAddressError('must use https');
  if (url.username || url.password) throw new RefusedAddressError('must not contain a user name or password');
  if (!url.hostname) throw new RefusedAddressError('must name a host');
  return url;
}

/**
 * Decides where a webhook may connect: the URL must be public HTTPS, and every address its host has must be public
 * (a name is refused when any of its addresses is internal). The WHATWG URL parser has already turned decimal, octal
 * and hexadecimal IPv4 forms into dotted quads, so they are judged as the address they mean.
 */
export async function checkWebhookTarget(raw: string, options: GuardOptions): Promise<CheckedTarget> {
  const url = parseWebhookUrl(raw);
  const hostname = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  const port = url.port ? Number(url.port) : 443;
  let addresses: { address: string; family: 4 | 6 }[];
  if (net.isIP(hostname)) {
    addresses = [{ address: hostname, family: net.isIP(hostname) === 6 ? 6 : 4 }];
  } else {
    if (hostname.endsWith('.localhost') || hostname === 'localhost' || hostname === 'localhost.') {
      if (!options.allowLoopback) throw new RefusedAddressError('must not point at this machine');
    }
    try {
      addresses = await options.resolve(hostname);
    } catch {
      throw new RefusedAddressError(`the host ${hostname} does not resolve`);
    }
    if (addresses.length === 0) throw new RefusedAddressError(`the host ${hostname} does not resolve`);
  }
  for (const { address } of addresses) {
    const problem = addressProblem(address, options.allowLoopback);
    if (problem)
      throw new RefusedAddressError(
        net.isIP(hostname)
          ? `must be a public address (${problem})`
          : `the host ${hostname} resolves to an internal address (${problem})`,
      );
  }
  const chosen = addresses[0]!;
  return { url, hostname, port, address: chosen.address, family: chosen.family };
}
