import { RuleError } from '../rule-error.js';

/** A lead rule the command broke; the HTTP layer answers it with `status` and `code`. */
export class LeadRuleError extends RuleError {}
