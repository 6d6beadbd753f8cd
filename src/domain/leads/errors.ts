import { RuleError } from '../rule-error.js';

/** A lead rule the command broke; the HTTP layer answers it by its `kind` and `code`. */
export class LeadRuleError extends RuleError {}
