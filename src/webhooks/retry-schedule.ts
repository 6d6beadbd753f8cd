const MINUTE = 60_000;

/** Waits before the retries of a failed delivery (spec: 1 min, 5 min, 30 min, 2 h, 6 h, 24 h), then it is failed. */
export const RETRY_DELAYS_MS = [MINUTE, 5 * MINUTE, 30 * MINUTE, 120 * MINUTE, 360 * MINUTE, 1440 * MINUTE] as const;

/** When to try again after `attemptsMade` failed attempts (the last one ending at `failedAt`), or null when it has failed for good. */
export function nextAttemptAt(attemptsMade: number, failedAt: Date): Date | null {
  const delay = RETRY_DELAYS_MS[attemptsMade - 1];
  return delay === undefined ? null : new Date(failedAt.getTime() + delay);
}
