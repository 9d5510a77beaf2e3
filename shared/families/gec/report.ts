import { num, usd, words } from '../../lib/format.js';
import type { CostPoint } from '../../lib/metrics/index.js';
import type { Report } from '../../model/report.js';

type MethodView = Record<string, unknown> & {
  accuracyVsCost?: CostPoint[];
  fusions?: Record<string, CostPoint>;
};

/** report.txt's "Method" section: the method's own figures (report.json `metrics.method`). */
export function renderMethod(report: Report): string[] {
  const view = report.metrics.method as MethodView | undefined;
  if (!view) return [];
  const lines = ['', `Method ${report.config.method}`];
  for (const [key, value] of Object.entries(view)) {
    if (key === 'accuracyVsCost' || key === 'fusions') continue;
    if (typeof value === 'number')
      lines.push(`  ${words(key).padEnd(18)} ${Number.isInteger(value) ? value : num(value)}`);
    else if (value === null) lines.push(`  ${words(key).padEnd(18)} n/a`);
    else if (typeof value === 'string') lines.push(`  ${words(key).padEnd(18)} ${value}`);
    else if (value && typeof value === 'object') {
      const entries = Object.entries(value as Record<string, unknown>).map(([k, v]) =>
        typeof v === 'object' && v !== null
          ? `${k} {${Object.entries(v)
              .map(([a, b]) => `${a}: ${b}`)
              .join(', ')}}`
          : `${k} ${v}`,
      );
      lines.push(`  ${words(key).padEnd(18)} ${entries.length > 0 ? entries.join(', ') : 'none'}`);
    }
  }
  const points = [...Object.values(view.fusions ?? {}), ...(view.accuracyVsCost ?? [])];
  if (points.length > 0) {
    lines.push(
      '',
      '  accuracy against cost',
      `  ${'policy'.padEnd(32)} ${'n'.padStart(5)} ${'acc'.padStart(6)} ${'macroF1'.padStart(8)} ${'bin macro F1'.padStart(12)} ${'cost'.padStart(11)} ${'per 10K'.padStart(10)}`,
    );
    // A run that called a model without a price has no known cost: no policy's figure is one.
    const cost = (v: number | null) => (report.cost.priced === false ? 'unpriced' : usd(v));
    for (const p of points) {
      lines.push(
        `  ${p.policy.padEnd(32)} ${String(p.n).padStart(5)} ${num(p.accuracy).padStart(6)} ${num(p.macroF1).padStart(8)} ${num(p.binaryF1).padStart(12)} ${cost(p.costUsd).padStart(11)} ${cost(p.per10kUsd).padStart(10)}`,
      );
    }
  }
  return lines;
}
