/** A lead rule the command broke; the HTTP layer answers it with `status` and `code`. */
export class LeadRuleError extends Error {
  constructor(
    readonly status: 400 | 404 | 409,
    readonly code: string,
    message: string,
    readonly fields?: Record<string, string>,
  ) {
    super(message);
    this.name = 'LeadRuleError';
  }
}
