import { ENDPOINT_EVENTS } from '../domain/webhooks/endpoint.js';

/*
 * A delivery as its receiver saw it. The stored status says what the workers still do with a row ('pending' covers a
 * delivery never tried, one failing and waiting for its next retry, and one held by a paused endpoint); staff need to
 * tell those apart, and the console's filters and "retry failed" read the same states (deliveryStateCondition).
 */

/** The states a delivery shows, in the order the console's filter lists them. */
export const DELIVERY_STATES = ['succeeded', 'retrying', 'failed', 'waiting', 'queued', 'cancelled'] as const;
export type DeliveryStateKind = (typeof DELIVERY_STATES)[number];

/** What a delivery row holds that its state depends on. */
export interface DeliveryFacts {
  status: 'pending' | 'succeeded' | 'failed' | 'cancelled';
  attempts: number;
  event: string;
  next_attempt_at: string | null;
  superseded_by: string | null;
}

export type DeliveryState =
  | { kind: 'succeeded'; attempts: number }
  /** Not tried yet: due at its time. */
  | { kind: 'queued' }
  /** Its last attempt failed; it is tried again at `nextAttemptAt`. */
  | { kind: 'retrying'; attempts: number; nextAttemptAt: string | null }
  /** Every attempt the schedule allows failed: it is not tried again unless resent. */
  | { kind: 'failed'; attempts: number }
  /** Held while its endpoint is paused (after `attempts` failed attempts, or none): sent once it is resumed. */
  | { kind: 'waiting'; attempts: number }
  /** Never sent again: a resend succeeded (`supersededBy`), or its endpoint was deleted. */
  | { kind: 'cancelled'; supersededBy: string | null };

/**
 * The state of a delivery to an endpoint that is paused or not. A paused endpoint holds its deliveries, except
 * webhook.test events, which the workers send anyway (src/webhooks/claims.ts).
 */
export function deliveryState(d: DeliveryFacts, endpointPaused: boolean): DeliveryState {
  switch (d.status) {
    case 'succeeded':
      return { kind: 'succeeded', attempts: d.attempts };
    case 'failed':
      return { kind: 'failed', attempts: d.attempts };
    case 'cancelled':
      return { kind: 'cancelled', supersededBy: d.superseded_by };
    case 'pending':
      if (endpointPaused && d.event !== ENDPOINT_EVENTS.test) return { kind: 'waiting', attempts: d.attempts };
      return d.attempts === 0
        ? { kind: 'queued' }
        : { kind: 'retrying', attempts: d.attempts, nextAttemptAt: d.next_attempt_at };
    default: {
      const unknown: never = d.status;
      throw new Error(`Unknown delivery status ${String(unknown)}`);
    }
  }
}

/** Failing: its last attempt failed and no success ended it (retrying, failed for good, or held after failures). */
export function isFailing(state: DeliveryState): boolean {
  switch (state.kind) {
    case 'retrying':
    case 'failed':
      return true;
    case 'waiting':
      return state.attempts > 0;
    case 'succeeded':
    case 'queued':
    case 'cancelled':
      return false;
    default: {
      const unknown: never = state;
      throw new Error(`Unknown delivery state ${JSON.stringify(unknown)}`);
    }
  }
}

/** What the console's state filter offers: one state, or every failing delivery. */
export type DeliveryFilter = DeliveryStateKind | 'failing';
export const DELIVERY_FILTERS: readonly DeliveryFilter[] = ['failing', ...DELIVERY_STATES];

/**
 * The SQL condition on a delivery row `d` for a filter, given whether its endpoint is paused (the boolean parameter
 * `$paused`, given as its placeholder): the same partition as deliveryState and isFailing.
 */
export function deliveryStateCondition(filter: DeliveryFilter, paused: string): string {
  const held = `(${paused} AND d.event_type <> '${ENDPOINT_EVENTS.test}')`;
  switch (filter) {
    case 'succeeded':
    case 'failed':
    case 'cancelled':
      return `d.status = '${filter}'`;
    case 'waiting':
      return `(d.status = 'pending' AND ${held})`;
    case 'queued':
      return `(d.status = 'pending' AND NOT ${held} AND d.attempts = 0)`;
    case 'retrying':
      return `(d.status = 'pending' AND NOT ${held} AND d.attempts > 0)`;
    case 'failing':
      return `(d.status = 'failed' OR (d.status = 'pending' AND d.attempts > 0))`;
    default: {
      const unknown: never = filter;
      throw new Error(`Unknown delivery filter ${String(unknown)}`);
    }
  }
}

/**
 * The event-type filter as LIKE patterns: a comma- or space-separated list of kinds, each exact or a prefix ending
 * in `*` (`lead.*`). LIKE's own wildcards in what was typed match only themselves.
 */
export function eventPatterns(text: string): string[] {
  return text
    .split(/[\s,]+/)
    .filter(Boolean)
    .slice(0, 20)
    .map((kind) => {
      const prefix = kind.endsWith('*');
      const literal = (prefix ? kind.slice(0, -1) : kind).replace(/[\\%_]/g, (c) => `\\${c}`);
      return prefix ? `${literal}%` : literal;
    });
}
