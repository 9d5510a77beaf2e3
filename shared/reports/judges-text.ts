/**
 * report.txt lines for the judges' own reliability: a panel of judges (report.json `panel`) and
 * a judge's self-preference (`scores.<scorer>.bias.selfPreference`).
 */
import { num, pValue } from '../lib/format.js';
import type { Interval, MetricValue, PanelSummary, SelfPreferenceBias } from '../model/report.js';

const interval = (ci: Interval | undefined) => (ci ? `[${num(ci[0])}, ${num(ci[1])}]` : '');
const signed = (v: number | null | undefined) =>
  typeof v === 'number' && Number.isFinite(v) ? `${v >= 0 ? '+' : ''}${num(v)}` : 'n/a';
const metric = (m: MetricValue) => `${num(m.value)} ${interval(m.ci)}`.trimEnd();

/** A scorer's self-preference lines (under its scores). */
export function selfPreferenceLines(bias: SelfPreferenceBias, indent = '    '): string[] {
  const lines = [
    `${indent}self-preference (producer column ${bias.column}): ${bias.items} items with a verdict and gold` +
      `${bias.skipped ? `, ${bias.skipped} without` : ''}${bias.noProducer ? `, ${bias.noProducer} without a producer` : ''}${bias.noJudge ? `, ${bias.noJudge} with no known judge model` : ''}`,
  ];
  const families = Object.entries(bias.byProducer);
  if (families.length > 0) {
    lines.push(
      `${indent}  ${'producer family'.padEnd(16)} ${'n'.padStart(5)} ${'own'.padStart(5)}  ${'judge'.padEnd(24)} ${'gold'.padEnd(24)} judge − gold`,
    );
    for (const [family, f] of families) {
      lines.push(
        `${indent}  ${family.padEnd(16)} ${String(f.n).padStart(5)} ${String(f.ownFamily).padStart(5)}  ${metric(f.judge).padEnd(24)} ${metric(f.gold).padEnd(24)} ${signed(f.error.value)} ${interval(f.error.ci)}`.trimEnd(),
      );
    }
  }
  const pref = bias.selfPreference;
  lines.push(
    pref
      ? `${indent}  own-family bias ${signed(pref.value)} ${interval(pref.ci)} (error on its own family's outputs ${signed(pref.own.error)}, n ${pref.own.n}; on others' ${signed(pref.other.error)}, n ${pref.other.n})`
      : `${indent}  own-family bias n/a (needs outputs of the judge's own family and of another)`,
  );
  return lines;
}

/** report.txt's "Judge panel" section; nothing without a panel. */
export function panelLines(panel: PanelSummary | undefined): string[] {
  if (!panel) return [];
  const lines = [
    '',
    `Judge panel (${panel.source}): ${panel.judges.length} judges on ${panel.items} items; 95% bootstrap CI`,
  ];
  const width = Math.max(12, ...panel.judges.map((j) => j.length + 1));
  for (const judge of panel.judges) {
    const m = panel.accuracy[judge]!;
    lines.push(`  ${judge.padEnd(width)} accuracy ${metric(m)}  n ${m.n}`);
  }
  lines.push(
    `  ${'majority'.padEnd(width)} accuracy ${metric(panel.majority)}  n ${panel.majority.n}  (${panel.ties} tied, ${panel.tiesPolicy === 'wrong' ? 'counted wrong' : 'broken by the best judge'})`,
  );
  const vs = panel.majorityVsBest;
  if (vs)
    lines.push(
      `  majority − best judge (${vs.bestJudge}): ${signed(vs.delta)} ${interval(vs.ci)} over ${vs.n} items${vs.pValue === undefined ? '' : `, p ${pValue(vs.pValue)}`}`,
    );
  const e = panel.effectiveJudges;
  lines.push(
    `  effective independent judges ${num(e.value)} ${interval(e.ci)} of ${e.k} (mean error correlation ${num(e.meanErrorCorrelation)} over ${e.pairs} pairs)`,
  );
  for (const pair of panel.pairs) {
    lines.push(
      `  ${pair.judges.join(' ~ ')}: agree ${metric(pair.agreement)}, error correlation ${metric(pair.errorCorrelation)}, n ${pair.agreement.n}`,
    );
  }
  return lines;
}
