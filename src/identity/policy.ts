/** How long things of staff identity last (docs/decisions.md, "Staff identity"). */
export const IDENTITY_POLICY = {
  /** A session unused this long ends. */
  sessionIdleMs: 30 * 60_000,
  /** A session ends this long after its sign-in, however busy. */
  sessionAbsoluteMs: 12 * 3600_000,
  /** A password or passkey entered this recently counts as a recent sign-in. */
  recentSignInMs: 10 * 60_000,
  invitationMs: 7 * 24 * 3600_000,
  passwordResetMs: 30 * 60_000,
  /** Personal access tokens: 30 days unless asked otherwise, never more than a year. */
  accessTokenDefaultMs: 30 * 24 * 3600_000,
  accessTokenMaxMs: 365 * 24 * 3600_000,
  minPasswordLength: 12,
  /** Failed sign-ins: five per account and twenty per address, one back every minute. */
  signInPerAccount: { capacity: 5, refill_per_second: 1 / 60 },
  signInPerAddress: { capacity: 20, refill_per_second: 1 / 60 },
} as const;
