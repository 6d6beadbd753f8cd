/**
 * What kind of refusal a broken rule is: the request is `invalid`, names something `not_found`, or `conflict`s with
 * the current state; an uploaded file is `too_large`, of an `unsupported` content type, or `unprocessable` (its
 * content refused, as a file the virus scan flags). The HTTP edge (src/http/errors.ts) turns the kind into a status;
 * the domain knows no HTTP.
 */
export type RefusalKind = 'invalid' | 'not_found' | 'conflict' | 'too_large' | 'unsupported' | 'unprocessable';

/** A domain rule a command broke: its kind, the machine-readable code and the sentence the caller sees. */
export class Refusal extends Error {
  readonly refusal = 'rule';

  readonly kind: RefusalKind;
  readonly code: string;
  readonly fields?: Record<string, string>;
  constructor(kind: RefusalKind, code: string, message: string, fields?: Record<string, string>) {
    super(message);
    this.kind = kind;
    this.code = code;
    this.fields = fields;
    this.name = new.target.name;
  }
}
