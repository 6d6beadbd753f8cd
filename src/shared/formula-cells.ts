/*
 * One rule for spreadsheet formulas in CSV cells, both ways: the console's exports neutralise what the lead import
 * marks, and a file exported here imports back as it was (docs/decisions.md, "One rule for phones in CSV").
 */

/** A spreadsheet runs a cell that begins with one of these as a formula (OWASP's CSV injection list). */
const FORMULA_START = /^[=+\-@\t\r]/;

/**
 * A signed number or a phone (`+91 98765 43210`, `-3.5`, `+1 (555) 010-0000`): a sign, then only digits, spaces,
 * brackets, dots, hyphens and slashes, with a digit among them. Without a letter, a quote, `!`, `|` or `:` no function
 * or DDE call can be written, so a spreadsheet can at most compute a number from it, never run anything; and the
 * import reads it back as data.
 */
const SIGNED_DATA = /^[+-][\d ().\-/]*\d[\d ().\-/]*$/;

/** Whether a cell would start a formula that does something if a spreadsheet opened it. */
export function formulaRisk(cell: string): boolean {
  return FORMULA_START.test(cell) && !SIGNED_DATA.test(cell);
}

/** A cell as a file writes it: a formula risk with a leading apostrophe, so it opens as the text it is. */
export function neutralised(cell: string): string {
  return formulaRisk(cell) ? `'${cell}` : cell;
}

/**
 * A cell as an import reads it: one this rule neutralised (an apostrophe before a formula risk) is read as what was
 * written, so a file exported here imports back the same; the import still marks it as a formula risk.
 */
export function readBack(cell: string): string {
  return cell.startsWith("'") && formulaRisk(cell.slice(1)) ? cell.slice(1) : cell;
}
