import ipaddr from 'ipaddr.js';
import type { FastifyRequest } from 'fastify';
import type { KeyLookup } from '../keys/repository.js';
import { findKeyByValue, keyCacheId } from '../keys/repository.js';
import type { KeyLookupCache } from '../keys/key-cache.js';
import { parseKey } from '../keys/api-key.js';
import type { Scope } from '../shared/enums.js';
import type { Queryable } from '../storage/postgres.js';
import { hasFeature, rateBuckets, widgetBucket, type Feature } from '../workspaces/plans.js';
import type { WorkspaceCache } from '../workspaces/repository.js';
import type { BucketSpec, Workspace } from '../workspaces/workspace.js';
import type { BucketRequest, RateLimitStore, TakeResult } from '../ratelimit/token-bucket.js';
import { ApiError } from './errors.js';

/** What a route asks of the caller; set as `config.auth` on the route. */
export interface RouteAuth {
  /** Which kinds of key may call: secret only (most routes), public only (widget config) or both (lead creation). */
  keys: 'secret' | 'public' | 'any';
  scope?: Scope;
  feature?: Feature;
  /** The widget configuration takes the key from the `key` query parameter instead of the Authorization header. */
  keyFrom?: 'header' | 'query';
  /** `widget`: the request takes a token from the key's widget bucket only (see widgetBucket). */
  rate?: 'widget';
}

export interface AuthContext {
  key: KeyLookup;
  workspace: Workspace;
  /** Test-mode keys read and write only the sandbox. */
  sandbox: boolean;
  /** The request's normalised Origin when a public key passed the origin check. */
  origin: string | null;
  rate: { limit: number; remaining: number; resetSeconds: number };
}

const invalidKey = () => new ApiError(401, 'invalid_api_key', 'The API key is missing, unknown, revoked or expired');

function presentedKey(request: FastifyRequest, from: RouteAuth['keyFrom']): string | undefined {
  if (from === 'query') {
    const value = (request.query as Record<string, unknown> | undefined)?.key;
    return typeof value === 'string' ? value : undefined;
  }
  const header = request.headers.authorization;
  const match = header ? /^Bearer ([^\s]+)$/i.exec(header) : null;
  return match?.[1];
}

export function ipAllowed(ip: string, allowlist: readonly string[]): boolean {
  if (allowlist.length === 0) return true;
  let address: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    address = ipaddr.process(ip);
  } catch {
    return false;
  }
  return allowlist.some((entry) => {
    try {
      const [range, bits] = entry.includes('/')
        ? ipaddr.parseCIDR(entry)
        : [ipaddr.process(entry), address.kind() === 'ipv4' ? 32 : 128];
      const normalised =
        range.kind() === 'ipv6' && (range as ipaddr.IPv6).isIPv4MappedAddress()
          ? (range as ipaddr.IPv6).toIPv4Address()
          : range;
      return normalised.kind() === address.kind() && address.match(normalised, bits);
    } catch {
      return false;
    }
  });
}

export function requestOrigin(request: FastifyRequest): string | null {
  const origin = request.headers.origin;
  if (typeof origin !== 'string' || origin === 'null') return null;
  try {
    return new URL(origin).origin;
  } catch {
    return null;
  }
}

export interface AuthDeps {
  sql: Queryable;
  keys: KeyLookupCache;
  workspaces: WorkspaceCache;
  rateLimits: RateLimitStore;
  /** Failed authentications allowed per client address (config.authFailureLimit). */
  failureLimit: BucketSpec;
  now: () => Date;
}

/**
 * The client address whose failures are counted together: the IPv4 address, or the /64 of an IPv6 address (one
 * subscriber's network: counting single IPv6 addresses would let one client rotate through 2^64 of them).
 */
export function failureAddress(ip: string): string {
  try {
    const address = ipaddr.process(ip);
    if (address.kind() === 'ipv4') return address.toString();
    const parts = (address as ipaddr.IPv6).parts.slice(0, 4);
    return `${parts.map((p) => p.toString(16)).join(':')}::/64`;
  } catch {
    return ip;
  }
}

function failureBucket(request: FastifyRequest, spec: BucketSpec): BucketRequest {
  return { id: `auth-failures:${failureAddress(request.ip)}`, scope: 'failed_authentication', spec };
}

function tooManyFailures(retryAfterSeconds: number): ApiError {
  return new ApiError(
    429,
    'rate_limited',
    `Too many failed authentications from your address; retry in ${retryAfterSeconds} s`,
    { scope: 'failed_authentication', retry_after: retryAfterSeconds },
    { 'retry-after': String(retryAfterSeconds) },
  );
}

/**
 * The key a well-formed value names. A value whose hash is among no key's (the cache knows them all) is refused
 * without a lookup, so made-up keys cost the database nothing and a valid key never waits behind them.
 */
async function lookUpKey(value: string, deps: AuthDeps): Promise<KeyLookup | undefined> {
  const cacheId = keyCacheId(value);
  const cached = deps.keys.get(cacheId);
  if (cached) return cached;
  if (!(await deps.keys.exists(deps.sql, cacheId))) return undefined;
  return findKeyByValue(deps.sql, value, deps.keys);
}

type FailureDeps = Pick<AuthDeps, 'rateLimits' | 'failureLimit'>;

/** Before a preflight's origin lookup (src/http/cors.ts): 429 when the client's address has used up its failures. */
export async function failureGate(request: FastifyRequest, deps: FailureDeps): Promise<void> {
  const gate = await deps.rateLimits.peek([failureBucket(request, deps.failureLimit)]);
  if (!gate.allowed) throw tooManyFailures(gate.retryAfterSeconds);
}

/**
 * Counts a failed authentication (or refused preflight) against the client's address: the refusal (401 by default),
 * or 429 once the address has none left.
 */
export async function failed(
  request: FastifyRequest,
  deps: FailureDeps,
  refusal: () => ApiError = invalidKey,
): Promise<ApiError> {
  const taken = await deps.rateLimits.take([failureBucket(request, deps.failureLimit)]);
  return taken.allowed ? refusal() : tooManyFailures(taken.retryAfterSeconds);
}

/** Authenticates and authorises a request in the order: key, workspace, IP, key kind, scope, origin, plan, rate. */
export async function authenticate(request: FastifyRequest, rule: RouteAuth, deps: AuthDeps): Promise<AuthContext> {
  const value = presentedKey(request, rule.keyFrom);
  // A missing or malformed key costs no lookup and cannot be a key: it is refused without counting.
  if (!value || !parseKey(value)) throw invalidKey();
  // The failed-authentication limit answers failures only: a valid key is served whatever else its address sent.
  const key = await lookUpKey(value, deps);
  if (!key || !inForce(key, deps)) throw await failed(request, deps);
  const workspace = await deps.workspaces.get(key.tenant_id, key.workspace_revision);
  if (!workspace) throw await failed(request, deps);
  checkWorkspaceAndAddress(request, key, workspace);
  checkKindAndScope(rule, key);
  const origin = checkedOrigin(request, key);
  checkPlan(rule, workspace);
  const taken = await deps.rateLimits.take(rateBucketsFor(rule, key, workspace));
  const rate = {
    limit: taken.constrained.limit,
    remaining: taken.constrained.remaining,
    resetSeconds: taken.constrained.resetSeconds,
  };
  if (!taken.allowed) throw rateLimited(taken, rate);
  return { key, workspace, sandbox: key.mode === 'test', origin, rate };
}

/** Neither revoked nor expired; the clock is read only for a key that expires. */
function inForce(key: KeyLookup, deps: Pick<AuthDeps, 'now'>): boolean {
  return !key.revoked_at && !(key.expires_at && key.expires_at.getTime() <= deps.now().getTime());
}

/** 402 for a suspended workspace, 403 for an address outside the key's allowlist. */
function checkWorkspaceAndAddress(request: FastifyRequest, key: KeyLookup, workspace: Workspace): void {
  if (workspace.status === 'suspended')
    throw new ApiError(402, 'tenant_suspended', 'This workspace is suspended; contact its owner');
  // request.ip is worked out from the forwarding headers at each read (TRUST_PROXY): read only when a list needs it.
  if (key.ip_allowlist.length > 0 && !ipAllowed(request.ip, key.ip_allowlist))
    throw new ApiError(403, 'ip_not_allowed', 'This key may not be used from your IP address');
}

/** 403 when the route wants the other kind of key, or a scope the key lacks. */
function checkKindAndScope(rule: RouteAuth, key: KeyLookup): void {
  if (rule.keys === 'secret' && key.kind !== 'secret') {
    throw new ApiError(403, 'insufficient_scope', 'This endpoint needs a secret key', { required: 'secret_key' });
  }
  if (rule.keys === 'public' && key.kind !== 'public') {
    throw new ApiError(403, 'insufficient_scope', 'This endpoint needs a public key', { required: 'public_key' });
  }
  if (rule.scope && !key.scopes.includes(rule.scope)) {
    throw new ApiError(403, 'insufficient_scope', `This key lacks the scope ${rule.scope}`, { required: rule.scope });
  }
}

/** A public key's request must come from one of its allowed origins, which it returns; a secret key's has none. */
function checkedOrigin(request: FastifyRequest, key: KeyLookup): string | null {
  if (key.kind !== 'public') return null;
  const origin = requestOrigin(request);
  if (!origin || !key.allowed_origins.includes(origin)) {
    throw new ApiError(403, 'origin_not_allowed', 'The request origin is not among the allowed origins of this key');
  }
  // From here on the browser may read the answer, a refusal (such as 429) included.
  request.corsOrigin = origin;
  return origin;
}

/** 403 when the route needs a feature the workspace's plan does not have. */
function checkPlan(rule: RouteAuth, workspace: Workspace): void {
  if (rule.feature && !hasFeature(workspace, rule.feature)) {
    throw new ApiError(403, 'plan_feature_unavailable', 'Webhook management needs the Growth or Enterprise plan');
  }
}

/** The buckets a request takes a token from: the widget's alone, or the key's and the route's scope's. */
function rateBucketsFor(rule: RouteAuth, key: KeyLookup, workspace: Workspace): BucketRequest[] {
  const buckets: BucketRequest[] = [];
  if (rule.rate === 'widget') {
    buckets.push({ id: `key:${key.id}:widget`, scope: 'widget', spec: widgetBucket(workspace) });
  } else {
    const specs = rateBuckets(workspace, rule.scope);
    buckets.push({ id: `key:${key.id}`, scope: 'key', spec: specs.key });
    if (rule.scope && specs.scope)
      buckets.push({ id: `key:${key.id}:${rule.scope}`, scope: rule.scope, spec: specs.scope });
  }
  return buckets;
}

/** The 429 for a request over one of its buckets, with the rate-limit headers of the one that constrained it. */
function rateLimited(taken: TakeResult, rate: AuthContext['rate']): ApiError {
  return new ApiError(
    429,
    'rate_limited',
    `Too many requests; retry in ${taken.retryAfterSeconds} s`,
    { scope: taken.constrained.scope, retry_after: taken.retryAfterSeconds },
    {
      'retry-after': String(taken.retryAfterSeconds),
      'ratelimit-limit': String(rate.limit),
      'ratelimit-remaining': String(rate.remaining),
      'ratelimit-reset': String(rate.resetSeconds),
    },
  );
}
