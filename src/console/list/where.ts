/**
 * The conditions of a list's query, each a fixed SQL fragment naming its values by parameter: a filter adds
 * `(n) => \`owner_id = ${n}::uuid\`` with the value, never the value's text. `$1` is always the workspace id.
 */
export class Where {
  readonly values: unknown[];
  readonly conditions: string[];

  constructor(tenantId: string, conditions: readonly string[]) {
    this.values = [tenantId];
    this.conditions = [...conditions];
  }

  /** A condition with one value, the fragment given its parameter's name. */
  add(fragment: (parameter: string) => string, value: unknown): this {
    this.conditions.push(fragment(this.param(value)));
    return this;
  }

  /** A condition with no value (it is written here, in full). */
  when(condition: string): this {
    this.conditions.push(condition);
    return this;
  }

  /** A value as the next parameter, by name (for a fragment that uses several). */
  param(value: unknown): string {
    this.values.push(value);
    return `$${this.values.length}`;
  }

  /** A copy to add a page's bounds to without changing the filter's own. */
  copy(): Where {
    const next = new Where(this.values[0] as string, this.conditions);
    next.values.push(...this.values.slice(1));
    return next;
  }

  get sql(): string {
    return this.conditions.join(' AND ');
  }
}
