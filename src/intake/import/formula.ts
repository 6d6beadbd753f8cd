/**
 * Whether a cell would start a formula if a spreadsheet opened it (OWASP's CSV injection list: `=`, `+`, `-`, `@`, a
 * tab or a carriage return first). A phone or a number (`+91 98765 43210`, `-3.5`) is data, not a formula. The import
 * keeps such a cell as text and never evaluates it; the preview says so.
 */
export function looksLikeFormula(cell: string): boolean {
  const first = cell[0];
  if (first === '=' || first === '@' || first === '\t' || first === '\r') return true;
  if (first === '+' || first === '-') return !/^[+-][\d\s().\-/]*$/.test(cell);
  return false;
}
