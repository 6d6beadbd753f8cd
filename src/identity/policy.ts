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
  maxPasswordLength: 256,
  /**
   * Password attempts (sign-in and re-entry in a session), each costing one before the password is checked, right or
   * wrong. From an address the account signed in from within `knownAddressMs`: ten (room for the member's own
   * sign-ins), one back a minute, for that address alone.
   */
  signInKnownAddress: { capacity: 10, refill_per_second: 1 / 60 },
  /** From any other address: five for that address, one back every ten minutes... */
  signInNewAddress: { capacity: 5, refill_per_second: 1 / 600 },
  /** ...and, for all such addresses together, ten per account, one back every ten minutes (at most 154 a day). */
  signInNewAddresses: { capacity: 10, refill_per_second: 1 / 600 },
  /** Failed attempts per address over every account (spraying many accounts from one place). */
  signInPerAddress: { capacity: 20, refill_per_second: 1 / 60 },
  knownAddressMs: 90 * 24 * 3600_000,
  /** "Forgot my password": three per email then one every ten minutes; ten per address then one every six. */
  resetPerAccount: { capacity: 3, refill_per_second: 1 / 600 },
  resetPerAddress: { capacity: 10, refill_per_second: 1 / 360 },
} as const;
