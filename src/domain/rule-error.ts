/** A domain rule a command broke, with the status and code the caller sees. Plain data: the domain knows no HTTP. */
export class RuleError extends Error {
  constructor(
    readonly status: 400 | 404 | 409,
    readonly code: string,
    message: string,
    readonly fields?: Record<string, string>,
  ) {
    super(message);
    this.name = new.target.name;
  }
}
