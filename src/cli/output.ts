/** Prints a result as JSON (for scripts, with --json) or as the human text given. */
export function output(json: boolean, value: unknown, human: () => string): void {
  process.stdout.write(json ? `${JSON.stringify(value, null, 2)}\n` : `${human()}\n`);
}

export function table(rows: Record<string, unknown>[], columns: string[]): string {
  if (rows.length === 0) return '(none)';
  const cell = (v: unknown) =>
    v === null || v === undefined
      ? '-'
      : v instanceof Date
        ? v.toISOString()
        : Array.isArray(v)
          ? v.join(',')
          : String(v);
  const widths = columns.map((c) => Math.max(c.length, ...rows.map((r) => cell(r[c]).length)));
  const line = (values: string[]) =>
    values
      .map((v, i) => v.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  return [line(columns), ...rows.map((r) => line(columns.map((c) => cell(r[c]))))].join('\n');
}

export class CliError extends Error {
  override name = 'CliError';

  readonly exitCode;
  /** 2 for a refused command line; other codes for outcomes scripts tell apart (3: `audit verify` found a break). */
  constructor(message: string, exitCode = 2) {
    super(message);
    this.exitCode = exitCode;
  }
}

/** The refusal of a record that is not in the workspace (or its sandbox): "No task 0193… in acme (sandbox)". */
export function notFoundIn(
  what: string,
  id: string,
  workspace: { slug: string },
  sandbox: boolean | undefined,
): CliError {
  return new CliError(`No ${what} ${id} in ${workspace.slug}${sandbox ? ' (sandbox)' : ''}`);
}
