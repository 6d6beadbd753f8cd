const MINUTE = 60_000;

/** Waits before the retries of a failed delivery (spec: 1 min, 5 min, 30 min, 2 h, 6 h, 24 h), then it is failed. */
export const RETRY_DELAYS_MS = [MINUTE, 5 * MINUTE, 30 * MINUTE, 120 * MINUTE, 360 * MINUTE, 1440 * MINUTE] as const;

/**
 * Each wait is moved by up to this share either way, so the retries of deliveries that failed together (an endpoint
 * that went down with a backlog) spread out instead of coming due in the same instant; the spec's step stays the centre.
 */
export const RETRY_JITTER = 0.05;

/**
 * When to try again after `attemptsMade` failed attempts (the last one ending at `failedAt`), or null when it has
 * failed for good. `random` is a number in [0, 1) (Math.random in service; tests pass their own).
 */
export function nextAttemptAt(attemptsMade: number, failedAt: Date, random: () => number = Math.random): Date | null {
  const delay = RETRY_DELAYS_MS[attemptsMade - 1];
  if (delay === undefined) return null;
  const jitter = (random() * 2 - 1) * RETRY_JITTER;
  return new Date(failedAt.getTime() + Math.round(delay * (1 + jitter)));
}
