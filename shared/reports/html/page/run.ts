/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
/** The page of one run: header facts, banners, every scorer's figures and charts, cost, latency, the family's figures, the items. */
import { humanCeilingSentence } from '../../../lib/format.js';
import { headlineMetrics, metricSpec } from '../../../model/metrics.js';
import type { ScoreKind } from '../../../model/model.js';
import {
  type HumanAgreement,
  type MetricValue,
  type Report,
  type ScorerSummary,
  sliceScored,
} from '../../../model/report.js';
import { injectionMessage } from '../../injection-tally.js';
import type { ItemTable } from '../types.js';
import { histogram, roc } from './charts.js';
import {
  anyTable,
  banner,
  ciBar,
  ciText,
  h,
  metricName,
  ms,
  num,
  reader,
  section,
  signed,
  table,
  usd,
  withCi,
} from './dom.js';
import { itemsSection } from './items.js';
import { panelSection, selfPreferenceFigure } from './judges.js';
import { ppiFigure } from './ppi.js';

/** Per-class figures whose range is [0, 1], beside the metric table's unit-range metrics. */
const UNIT_FIGURES = new Set(['f1', 'precision', 'recall']);

function tile(label: string, value: string, testid?: string): HTMLElement {
  return h(
    'div',
    { class: 'tile', 'data-testid': testid },
    h('div', { class: 'tile-value' }, value),
    h('div', { class: 'tile-label' }, label),
  );
}

/**
 * The range a metric's CI bar spans: the metric table's [0, 1] or [-1, 1] for rates, agreement
 * and correlations, else around its interval.
 */
function barRange(metric: string, m: MetricValue): [number, number] {
  const range = metricSpec(metric)?.range;
  if (range === 'signed') return [-1, 1];
  const seen = [m.value, ...(m.ci ?? [])].filter((v): v is number => typeof v === 'number');
  if (
    range === 'unit' ||
    UNIT_FIGURES.has(metric) ||
    (seen.length > 0 && seen.every((v) => v >= 0 && v <= 1))
  )
    return [0, 1];
  if (seen.length === 0) return [0, 1];
  const lo = Math.min(...seen);
  const hi = Math.max(...seen);
  const pad = (hi - lo || Math.abs(hi) || 1) * 0.25;
  return [lo - pad, hi + pad];
}

function metricsTable(name: string, s: ScorerSummary): HTMLElement {
  const rows = Object.entries(s.metrics).map(([metric, m]) => {
    const [lo, hi] = barRange(metric, m);
    return [
      m.name ?? metricName(metric),
      h('span', { class: 'figure-value', 'data-metric': `${name}.${metric}` }, num(m.value)),
      ciText(m.ci, m.reason ?? 'n/a'),
      ciBar(m.value, m.ci, lo, hi),
      String(m.n),
    ];
  });
  return table(['metric', 'value', '95% CI', '', 'n'], rows, 'grid metrics');
}

/** report.json `metrics.binary`: the binary view of the primary scorer. */
interface BinaryView {
  accuracy: number | null;
  f1: number | null;
  positive: {
    label: string;
    precision: number | null;
    recall: number | null;
    f1: number | null;
    support: number;
  };
  negative: { precision: number; recall: number; f1: number; support: number };
}

function isBinaryView(value: unknown): value is BinaryView {
  const v = value as Partial<BinaryView>;
  return typeof v.positive === 'object' && v.positive !== null && typeof v.negative === 'object';
}

/**
 * The binary view, named so that its two F1 figures cannot be mistaken for each other: the
 * binary macro F1 (the mean of both classes' F1) and each class's own F1.
 */
function binaryFigure(b: BinaryView): HTMLElement {
  const positive = b.positive.label ? `${b.positive.label} (positive)` : 'positive';
  return h(
    'figure',
    { class: 'figure wide' },
    h('figcaption', null, 'Binary view: the positive class against the rest'),
    table(
      ['', ''],
      [
        [h('b', null, 'binary accuracy'), num(b.accuracy)],
        [h('b', null, "binary macro F1 (mean of both classes' F1)"), num(b.f1)],
      ],
      'grid kv',
    ),
    table(
      ['class', 'precision', 'recall', 'F1', 'support'],
      [
        [
          positive,
          num(b.positive.precision),
          num(b.positive.recall),
          num(b.positive.f1),
          String(b.positive.support),
        ],
        [
          'rest',
          num(b.negative.precision),
          num(b.negative.recall),
          num(b.negative.f1),
          String(b.negative.support),
        ],
      ],
    ),
  );
}

function confusionHeatmap(confusion: Record<string, Record<string, number>>): HTMLElement {
  const golds = Object.keys(confusion);
  const predicted = [...new Set(golds.flatMap((g) => Object.keys(confusion[g]!)))];
  const max = Math.max(1, ...golds.flatMap((g) => predicted.map((p) => confusion[g]![p] ?? 0)));
  return h(
    'figure',
    { class: 'figure' },
    h('figcaption', null, 'Confusion matrix (rows gold, columns predicted)'),
    h(
      'table',
      { class: 'heatmap' },
      h(
        'thead',
        null,
        h(
          'tr',
          null,
          h('th', null, 'gold \\ predicted'),
          predicted.map((p) => h('th', null, p)),
        ),
      ),
      h(
        'tbody',
        null,
        golds.map((g) =>
          h(
            'tr',
            null,
            h('th', null, g),
            predicted.map((p) => {
              const n = confusion[g]![p] ?? 0;
              const strength = n / max;
              return h(
                'td',
                {
                  class: g === p ? 'diag' : null,
                  style: {
                    background: `rgba(${g === p ? '22,163,74' : '220,38,38'},${(0.08 + strength * 0.72).toFixed(3)})`,
                    color: strength > 0.6 ? '#fff' : '',
                  },
                  title: `gold ${g}, predicted ${p}: ${n}`,
                },
                String(n),
              );
            }),
          ),
        ),
      ),
    ),
  );
}

/**
 * The human ceiling of a scorer whose items several annotators labelled: alpha among them, their
 * pairwise agreement and the judge's agreement with them, each with its CI, and which is higher.
 */
function humanCeiling(name: string, a: HumanAgreement): HTMLElement {
  const row = (label: string, key: string, m: MetricValue): HTMLElement[] => [
    h('b', null, label),
    h('span', { class: 'figure-value', 'data-metric': `${name}.humanAgreement.${key}` }, num(m.value)),
    h('span', null, ciText(m.ci)),
    ciBar(m.value, m.ci, key === 'pairwiseAgreement' || key === 'judgeAgreement' ? 0 : -1, 1),
    h('span', null, String(m.n)),
  ];
  return h(
    'figure',
    { class: 'figure', 'data-testid': 'human-agreement' },
    h(
      'figcaption',
      null,
      `Human agreement: ${a.annotators} annotators on ${a.items} items, and the judge with them`,
    ),
    table(
      ['', 'value', '95% CI', '', 'n'],
      [
        row(`Krippendorff's alpha (${a.level})`, 'alpha', a.alpha),
        row('annotators agree pairwise', 'pairwiseAgreement', a.pairwiseAgreement),
        row(
          a.judgeVerdict === 'threshold'
            ? `judge agrees with an annotator (its value ≥ ${a.threshold} as 1)`
            : 'judge agrees with an annotator',
          'judgeAgreement',
          a.judgeAgreement,
        ),
        ...(a.judgeAlpha ? [row("judge's alpha against the annotators", 'judgeAlpha', a.judgeAlpha)] : []),
        ...(a.judgeCorrelation
          ? [row('judge correlation with an annotator (Pearson r)', 'judgeCorrelation', a.judgeCorrelation)]
          : []),
      ],
      'grid metrics',
    ),
    h(
      'p',
      { class: 'muted', 'data-testid': 'human-ceiling' },
      `${humanCeilingSentence(a)}.`.replace(/^./, (c) => c.toUpperCase()),
    ),
  );
}

function scorerSection(report: Report, items: ItemTable, name: string, s: ScorerSummary): HTMLElement {
  const primary = name === report.primaryScorer;
  const unscored = Object.entries(s.unscored).map(([kind, n]) => `${kind} ${n}`);
  const parts: (HTMLElement | null)[] = [
    h(
      'p',
      { class: 'muted' },
      `${s.kind} scorer${primary ? ', primary' : ''}: ${s.n} scored${unscored.length ? `; unscored: ${unscored.join(', ')}` : ''}. 95% intervals: Wilson's (continuity-corrected) for a proportion, the bootstrap for the rest.`,
    ),
    metricsTable(name, s),
  ];
  const tables = (s.tables ?? {}) as {
    perClass?: Record<string, { precision: number; recall: number; f1: number; support: number }>;
    confusion?: Record<string, Record<string, number>>;
  };
  const charts: (HTMLElement | null)[] = [];
  if (tables.confusion && Object.keys(tables.confusion).length > 0)
    charts.push(confusionHeatmap(tables.confusion));
  if (tables.perClass && Object.keys(tables.perClass).length > 0) {
    charts.push(
      h(
        'figure',
        { class: 'figure' },
        h('figcaption', null, 'Per class'),
        table(
          ['label', 'precision', 'recall', 'F1', 'support'],
          Object.entries(tables.perClass).map(([label, c]) => [
            label,
            num(c.precision),
            num(c.recall),
            num(c.f1),
            String(c.support),
          ]),
        ),
      ),
    );
  }
  const meta = items.scorers.find((x) => x.name === name);
  if (s.kind === 'number' && meta) {
    const value = reader(items.columns[`score:${name}`]);
    const target = reader(items.columns[`target:${name}`]);
    const values: number[] = [];
    const golds: number[] = [];
    const scoredWithGold: number[] = [];
    for (let i = 0; i < items.n; i += 1) {
      const v = value(i);
      if (typeof v !== 'number') continue;
      values.push(v);
      const g = target(i);
      if (typeof g === 'number') {
        scoredWithGold.push(v);
        golds.push(g);
      }
    }
    const drawn = tableShare(items);
    charts.push(
      histogram(
        `Distribution of ${name}`,
        values,
        name,
        meta.threshold,
        drawn && `Drawn from ${drawn}; the metrics are over every item.`,
      ),
    );
    if (meta.binaryGold) {
      const auc = (s.metrics.rocAuc?.value ?? null) as number | null;
      const curve = roc(scoredWithGold, golds, meta.threshold, auc);
      charts.push(curve);
      if (drawn && curve) charts.push(h('p', { class: 'note' }, `The ROC curve is drawn from ${drawn}.`));
    }
  }
  const rest = Object.entries(s.tables ?? {}).filter(
    ([key]) => key !== 'perClass' && key !== 'confusion' && !(key === 'distribution' && s.kind === 'number'),
  );
  for (const [key, value] of rest) {
    charts.push(h('figure', { class: 'figure' }, h('figcaption', null, metricName(key)), anyTable(value)));
  }
  if (s.bias?.length) {
    const b = s.bias.length;
    charts.push(
      h(
        'figure',
        { class: 'figure' },
        h('figcaption', null, 'Length bias: Spearman ρ of output length against score'),
        table(
          ['', 'ρ', 'n'],
          [
            ['all', num(b.spearman), String(b.n)],
            ...Object.entries(b.byGold).map(([g, c]) => [`gold ${g}`, num(c.spearman), String(c.n)]),
          ],
        ),
      ),
    );
  }
  if (s.ppi) charts.push(ppiFigure(name, s.ppi));
  if (s.humanAgreement) charts.push(humanCeiling(name, s.humanAgreement));
  if (s.bias?.selfPreference) charts.push(selfPreferenceFigure(name, s.bias.selfPreference));
  parts.push(h('div', { class: 'charts' }, charts));
  return h(
    'section',
    { class: 'scorer', 'data-scorer': name },
    h('h3', null, `${name}${primary ? ' (primary)' : ''}`),
    parts,
  );
}

/**
 * Which items the charts drawn from the item table cover, when the table holds only the run's
 * first items (undefined when it holds them all).
 */
function tableShare(items: ItemTable): string | undefined {
  if (!(items.total > items.n)) return undefined;
  return `the item table's ${items.n.toLocaleString('en')} items (the first of ${items.total.toLocaleString('en')})`;
}

/** Keys of report.metrics that repeat the primary scorer's figures (shown above); the rest are the family's. */
const PRIMARY_REPEATS = new Set(['n', 'ci', 'perClass', 'confusion', 'distribution']);

export function runPage(report: Report, items: ItemTable): HTMLElement[] {
  const c = report.counts;
  const simulatedItems = reader(items.columns.simulated);
  // Items the simulator answered, and those real models did (an item nothing answered is neither).
  let simulated = 0;
  let real = 0;
  for (let i = 0; i < items.n; i += 1) {
    const answered = simulatedItems(i);
    if (answered === true) simulated += 1;
    else if (answered === false) real += 1;
  }
  const out: HTMLElement[] = [];
  if (report.status === 'incomplete') {
    const missing =
      report.missingItems === null
        ? 'the dataset was not read to its end'
        : `${report.missingItems} of ${c.items + report.missingItems} items have no result`;
    out.push(
      banner(
        'bad',
        `INCOMPLETE: ${missing}; the figures cover the ${c.items} items present. Run it again to resume it.`,
      ),
    );
  }
  if (report.injection) out.push(banner('warn', `POSSIBLE INJECTION: ${injectionMessage(report.injection)}`));
  if (report.simulated) {
    const mixed = simulated > 0 && real > 0;
    const of = items.total > items.n ? `the first ${items.n} items (the item table's)` : `${items.n} items`;
    out.push(
      banner(
        'sim',
        mixed
          ? `MIXED: of ${of}, ${simulated} were answered by the simulator and ${real} by real models. ${report.notice ?? ''}`
          : (report.notice ?? 'SIMULATED'),
      ),
    );
  }
  const config = Object.entries(report.config).map(([k, v]) => `${k}: ${v}`);
  out.push(
    h(
      'header',
      { class: 'page-head' },
      h('h1', null, `Assay report — ${report.suite}`),
      h(
        'dl',
        { class: 'facts' },
        h('dt', null, 'run'),
        h('dd', { 'data-testid': 'run-id' }, report.runId),
        h('dt', null, 'task'),
        h('dd', null, [report.task, ...config].join(' · ')),
        report.predictions ? h('dt', null, 'outputs') : null,
        report.predictions ? h('dd', null, report.predictions) : null,
        h('dt', null, 'backends'),
        h(
          'dd',
          null,
          report.backends.length > 0 ? report.backends.join(', ') : '(none: the dataset gives the outputs)',
        ),
        h('dt', null, 'dataset'),
        h('dd', null, report.dataset),
        h('dt', null, 'time'),
        h('dd', null, `${report.startedAt} → ${report.finishedAt ?? '(not finished)'}`),
        h('dt', null, 'prompts'),
        h(
          'dd',
          { class: 'prompts' },
          Object.keys(report.prompts).length === 0
            ? 'none'
            : Object.entries(report.prompts).map(([path, hash]) =>
                h('div', null, path, ' ', h('code', null, hash)),
              ),
        ),
      ),
    ),
  );
  const byFailure = Object.entries(c.byFailure).map(([k, n]) => `${k} ${n}`);
  const primary = report.scores[report.primaryScorer];
  const headlineMetric = primary && Object.entries(primary.metrics)[0];
  out.push(
    h(
      'div',
      { class: 'tiles' },
      tile('items', String(c.items), 'items'),
      tile('scored', String(c.scored), 'scored'),
      tile(`failed${byFailure.length ? ` (${byFailure.join(', ')})` : ''}`, String(c.failed), 'failed'),
      headlineMetric
        ? tile(
            `${report.primaryScorer} ${metricName(headlineMetric[0])}`,
            num(headlineMetric[1].value),
            'headline',
          )
        : null,
      // A cost with calls to a model without a price is not a figure: say so, never $0.
      tile(
        report.cost.priced === false
          ? `cost (no price for ${(report.cost.unpriced ?? []).join(', ')})`
          : 'cost',
        report.cost.priced === false ? 'unpriced' : usd(report.cost.totalUsd),
        'cost',
      ),
      tile(
        'per 10K items at list price',
        report.cost.priced === false ? 'unpriced' : usd(report.cost.per10kUsd),
      ),
      tile('latency p50 / p95', `${ms(report.latencyMs.p50)} / ${ms(report.latencyMs.p95)}`),
    ),
  );
  out.push(
    section(
      'Scores',
      h(
        'p',
        { class: 'muted' },
        'Unscored items are skipped and counted, never scored as wrong. A metric with no data is n/a.',
      ),
      Object.entries(report.scores).map(([name, s]) => scorerSection(report, items, name, s)),
    ),
  );

  const cost = report.cost;
  const stages = Object.entries(cost.byStage);
  const latency = reader(items.columns.latency);
  const drawn = tableShare(items);
  const latencies: number[] = [];
  for (let i = 0; i < items.n; i += 1) {
    const v = latency(i);
    if (typeof v === 'number') latencies.push(v);
  }
  out.push(
    section(
      'Cost and latency',
      h(
        'p',
        null,
        cost.priced === false
          ? `Unpriced: ${(cost.unpriced ?? []).join(', ')} had no price in the price table (give one with run.prices in the suite or --prices FILE), so the figures below leave their calls out. `
          : '',
        `Paid ${usd(cost.totalUsd)} · at list price (cached answers priced as if called): per item ${usd(cost.perItemUsd)}, per 10K ${usd(cost.per10kUsd)} · calls ${cost.calls} (cached ${cost.cachedCalls}, saving ${usd(cost.savedUsd)}) · tokens in ${cost.tokens.input} (cached ${cost.tokens.cached}), out ${cost.tokens.output}`,
        cost.batch
          ? ` · batch lane: ${cost.batch.calls} calls at ${Math.round(cost.batch.discount * 100)}% off, saving ${usd(cost.batch.savedUsd)}`
          : '',
      ),
      h(
        'div',
        { class: 'charts' },
        h(
          'figure',
          { class: 'figure' },
          h('figcaption', null, 'Cost by stage'),
          table(
            ['stage', 'cost', 'share', 'calls'],
            stages.map(([stage, s]) => [
              stage,
              s.priced === false ? `unpriced (priced calls ${usd(s.usd)})` : usd(s.usd),
              h(
                'span',
                { class: 'share' },
                h('span', { style: { width: `${cost.totalUsd > 0 ? (s.usd / cost.totalUsd) * 100 : 0}%` } }),
              ),
              String(s.calls),
            ]),
          ),
        ),
        latencies.length > 0
          ? histogram(
              'Latency per item',
              latencies,
              'ms',
              null,
              `p50 ${ms(report.latencyMs.p50)}, p95 ${ms(report.latencyMs.p95)}, ${latencies.length} items with model time${drawn ? ` (drawn from ${drawn}; p50 and p95 are over every item)` : ''}`,
            )
          : h('p', { class: 'muted' }, 'No item called a model: no latency.'),
      ),
    ),
  );

  const family = Object.entries(report.metrics).filter(
    ([key, value]) =>
      !PRIMARY_REPEATS.has(key) &&
      value !== null &&
      typeof value === 'object' &&
      !(key in (primary?.metrics ?? {})),
  );
  if (family.length > 0) {
    out.push(
      section(
        `The ${report.task} family's figures`,
        family.map(([key, value]) =>
          key === 'binary' && isBinaryView(value)
            ? binaryFigure(value as BinaryView)
            : h('figure', { class: 'figure wide' }, h('figcaption', null, metricName(key)), anyTable(value)),
        ),
      ),
    );
  }
  const panel = panelSection(report.panel);
  if (panel) out.push(panel);
  const slices = slicesSection(report);
  if (slices) out.push(slices);
  if (report.comparison) out.push(comparisonSummary(report.comparison));
  out.push(itemsSection(items));
  return out;
}

/**
 * The suite's slices: per column a table of its values, each with its items and the primary
 * scorer's headline metrics with their intervals, and a link that filters the items below.
 */
function slicesSection(report: Report): HTMLElement | undefined {
  if (!report.slices) return undefined;
  const kind = report.scores[report.primaryScorer]?.kind ?? 'label';
  const tables = Object.entries(report.slices).map(([column, values]) => {
    const metrics = headlineMetrics(kind as ScoreKind).filter((metric) =>
      Object.values(values).some((v) => v.metrics[metric] !== undefined),
    );
    const rows = Object.entries(values).map(([value, slice]) => [
      value,
      String(slice.n),
      String(sliceScored(slice) ?? ''),
      ...metrics.map((metric) => {
        const m = slice.metrics[metric];
        if (!m) return '';
        return h('span', { 'data-metric': `${column}=${value}.${metric}` }, withCi(m.value, m.ci));
      }),
      slice.note
        ? h('span', { class: 'muted' }, slice.note)
        : h(
            'button',
            {
              type: 'button',
              class: 'link',
              'data-slice': `${column}=${value}`,
              onclick: () =>
                document.dispatchEvent(new CustomEvent('assay:slice', { detail: { column, value } })),
            },
            'show items',
          ),
    ]);
    return h(
      'figure',
      { class: 'figure wide slices', 'data-slice-column': column },
      h('figcaption', null, `by ${column}`),
      table(
        ['value', 'items', 'scored', ...metrics.map((metric) => `${metricName(metric)} (95% CI)`), ''],
        rows,
        'grid slices',
      ),
    );
  });
  return section(`Slices (${report.primaryScorer}, per value)`, tables);
}

function comparisonSummary(c: Record<string, unknown>): HTMLElement {
  if (typeof c.error === 'string') {
    return section(
      'Compared with the previous run',
      h('p', null, `Not compared with ${String(c.baseRunId)}: ${c.error}`),
    );
  }
  const scores = (c.scores ?? {}) as Record<
    string,
    {
      coverage?: { delta: number; ci: [number, number]; pValue: number; reason?: string };
      deltas: Record<string, { delta: number; ci: [number, number]; pValue: number; reason?: string }>;
      mcnemarPValue?: number;
      flipped?: Record<string, number>;
    }
  >;
  const rows = Object.entries(scores).flatMap(([scorer, s]) =>
    [...(s.coverage ? [['coverage', s.coverage] as const] : []), ...Object.entries(s.deltas)].map(
      ([metric, d]) => [
        `${scorer} ${metricName(metric)}`,
        signed(d.delta),
        d.reason ?? `[${signed(d.ci[0])}, ${signed(d.ci[1])}]`,
        d.reason
          ? ''
          : ciBar(
              d.delta,
              d.ci,
              -Math.max(Math.abs(d.ci[0]), Math.abs(d.ci[1]), 0.01),
              Math.max(Math.abs(d.ci[0]), Math.abs(d.ci[1]), 0.01),
            ),
        d.reason ? 'n/a' : d.pValue < 0.001 ? '<0.001' : d.pValue.toFixed(3),
        s.flipped
          ? Object.entries(s.flipped)
              .map(([k, n]) => `${k} ${n}`)
              .join(', ')
          : '',
      ],
    ),
  );
  return section(
    'Compared with the previous run',
    h(
      'p',
      null,
      `Against ${String(c.baseRunId)} on ${String(c.paired)} items in both. `,
      h('a', { href: 'comparison.html' }, 'comparison.html'),
      ' has every flipped item.',
    ),
    table(['figure', 'Δ', '95% CI', '', 'p', 'flipped'], rows),
  );
}
