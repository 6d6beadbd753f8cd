import { Refusal } from '../refusal.js';

/** A lead rule the command broke; the HTTP layer answers it by its `kind` and `code`. */
export class LeadRefusal extends Refusal {}
