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

/**
 * A metric with its interval, `0.777 [0.723, 0.828]`; with the reason it has none when it says
 * one, `0.204 (too few items for an interval (n 5 < 200))`; `n/a` when there is no data.
 */
export const withInterval = (
  m: { value: number | null; ci?: readonly [number, number]; reason?: string } | null | undefined,
): string =>
  !m || m.value === null
    ? 'n/a'
    : m.ci
      ? `${num(m.value)} ${interval(m.ci)}`
      : m.reason
        ? `${num(m.value)} (${m.reason})`
        : num(m.value);

/**
 * The human ceiling in one sentence: whether the judge agrees with the annotators more or less
 * than they agree with each other (compared as printed, to three decimals). `measure` names the
 * two figures when they are not raw agreements (`Krippendorff's alpha`).
 */
export function ceilingSentence(judge: number | null, annotators: number | null, measure?: string): string {
  const named = measure ? `${measure} ` : '';
  if (judge === null || annotators === null)
    return `the judge's agreement with the annotators and theirs with each other cannot be compared (${named}${num(judge)} vs ${num(annotators)})`;
  const figures = `(${named}${num(judge)} vs ${num(annotators)})`;
  const [j, a] = [Number(num(judge)), Number(num(annotators))];
  if (j > a) return `the judge agrees with the annotators more than they agree with each other ${figures}`;
  if (j < a) return `the judge agrees with the annotators less than they agree with each other ${figures}`;
  return `the judge agrees with the annotators as much as they agree with each other ${figures}`;
}

/**
 * The human ceiling of a report's `humanAgreement` in one sentence, comparing only figures that
 * measure the same thing: Krippendorff's alpha over judge–annotator pairs beside alpha over
 * annotator–annotator pairs (chance-corrected alike, so a judge that always gives the commonest
 * label does not pass for one that agrees, as it would on raw agreement). A number scorer without a threshold against
 * 0/1 labels has no verdict to compare: the sentence says so and gives its correlation. A report
 * written before `judgeAlpha` compares the raw agreements, as it did.
 */
export function humanCeilingSentence(h: {
  alpha: { value: number | null };
  pairwiseAgreement: { value: number | null };
  judgeAgreement: { value: number | null };
  judgeAlpha?: { value: number | null };
  judgeCorrelation?: { value: number | null };
  judgeVerdict?: string;
}): string {
  if (h.judgeVerdict === 'none')
    return `the judge is not compared with the annotators: its scores are numbers with no threshold to make them 0/1 labels like theirs (mean Pearson r with each annotator ${num(h.judgeCorrelation?.value ?? null)})`;
  if (h.judgeAlpha) return ceilingSentence(h.judgeAlpha.value, h.alpha.value, "Krippendorff's alpha");
  return ceilingSentence(h.judgeAgreement.value, h.pairwiseAgreement.value);
}

/**
 * A plain-text table: a header, a rule, the rows; cells padded to their column. Cells are data
 * (labels, suites): written visibly on one line (see {@link visibleLine}) before they are measured.
 */
export function textTable(header: string[], rawRows: string[][]): string[] {
  const rows = rawRows.map((row) => row.map((cell) => visibleLine(cell)));
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

/**
 * Control characters (C0 but tab and line feed, DEL, and C1): a dataset or a model can put
 * terminal escape sequences in an id, a label or an output, which a terminal or a pager would
 * obey (clear the screen, forge a hyperlink, rewrite a line with a carriage return).
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;
/** The same and tab and line feed: for text that must stay on one line (a table cell). */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
const CONTROL_OR_BREAK = /[\u0000-\u001f\u007f-\u009f]/g;

const escapeControl = (c: string): string => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`;

/**
 * Text as a text file or the terminal shows it: every control character but tab and line feed
 * written visibly as `\xNN` (ESC as `\x1b`, CR as `\x0d`), so that no byte of data is obeyed
 * as a command. Every text output of data (report.txt, errors.txt, correct.txt, comparison.txt,
 * what the CLI prints) goes through this.
 */
export const visible = (text: string): string => text.replace(CONTROL, escapeControl);

/** {@link visible}, with tab and line feed escaped too: a value kept on one line. */
export const visibleLine = (text: string): string => text.replace(CONTROL_OR_BREAK, escapeControl);
