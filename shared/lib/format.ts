/** How report files write numbers: the same in report.txt, comparison.txt and the CLI. */

/** A figure with three decimals; `n/a` when there is no data (null). */
export const num = (v: unknown): string =>
  typeof v === 'number' && Number.isFinite(v) ? v.toFixed(3) : 'n/a';

/** Dollars: six decimals under a cent so small spends stay visible; `n/a` when undefined. */
export const usd = (v: number | null | undefined): string =>
  typeof v !== 'number' ? 'n/a' : `$${Math.abs(v) < 0.01 && v !== 0 ? v.toFixed(6) : v.toFixed(4)}`;

/** A signed difference: `+0.012`, `-0.300`, `±0.000`. */
export const signed = (v: number): string => `${v > 0 ? '+' : v < 0 ? '-' : '±'}${Math.abs(v).toFixed(3)}`;

export const pValue = (p: number): string => (p < 0.001 ? '<0.001' : p.toFixed(3));

/** `[lo, hi]` of an interval, or nothing. */
export const interval = (ci: readonly [number, number] | undefined): string =>
  ci ? `[${num(ci[0])}, ${num(ci[1])}]` : '';

/** A metric with its interval, `0.777 [0.723, 0.828]`; `n/a` when there is no data. */
export const withInterval = (
  m: { value: number | null; ci?: readonly [number, number] } | null | undefined,
): string => (!m || m.value === null ? 'n/a' : m.ci ? `${num(m.value)} ${interval(m.ci)}` : num(m.value));

/**
 * The human ceiling in one sentence: whether the judge agrees with the annotators more or less
 * than they agree with each other (compared as printed, to three decimals).
 */
export function ceilingSentence(judge: number | null, annotators: number | null): string {
  if (judge === null || annotators === null)
    return `the judge's agreement with the annotators and theirs with each other cannot be compared (${num(judge)} vs ${num(annotators)})`;
  const figures = `(${num(judge)} vs ${num(annotators)})`;
  const [j, a] = [Number(num(judge)), Number(num(annotators))];
  if (j > a) return `the judge agrees with the annotators more than they agree with each other ${figures}`;
  if (j < a) return `the judge agrees with the annotators less than they agree with each other ${figures}`;
  return `the judge agrees with the annotators as much as they agree with each other ${figures}`;
}

/** A plain-text table: a header, a rule, the rows; cells padded to their column. */
export function textTable(header: string[], rows: string[][]): string[] {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  return [line(header), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)];
}

/** Milliseconds, rounded; `n/a` when there is no data. */
export const ms = (v: number | null | undefined): string =>
  typeof v === 'number' ? `${Math.round(v)} ms` : 'n/a';

/** `camelCase` → `camel case`, for keys shown to people. */
export const words = (key: string): string => key.replace(/([A-Z])/g, ' $1').toLowerCase();
