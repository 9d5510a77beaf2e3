/** The bench's table: every figure beside its bound, and PASS/FAIL for the targets. */

export interface Check {
  /** What is measured. */
  figure: string;
  measured: string;
  /** The bound or baseline it is read against, measured in the same run. */
  bound: string;
  /** The target, when there is one (e.g. `≥ 0.9 of C/L`). */
  target?: string;
  pass?: boolean;
}

export function renderTable(checks: readonly Check[]): string {
  const rows = checks.map((c) => [
    c.figure,
    c.measured,
    c.bound,
    c.target ?? '',
    c.pass === undefined ? '' : c.pass ? 'PASS' : 'FAIL',
  ]);
  const cellText = (cell: string) => cell.replaceAll('|', '\\|');
  return [
    '| figure | measured | bound (same run) | target | |',
    '|---|---|---|---|---|',
    ...rows.map((r) => `| ${r.map(cellText).join(' | ')} |`),
  ].join('\n');
}
