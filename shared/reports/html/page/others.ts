/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
/** The sweep, comparison and leaderboard pages. */

import type { PairedDelta } from '../../../lib/metrics/index.js';
import type { LeaderboardEntry, MetricValue } from '../../../model/report.js';
import { answeredBy } from '../../answered-by.js';
import { gateOutcome, type SequentialLineInput, sequentialLine } from '../../gate-outcome.js';
import { scatter } from './charts.js';
import {
  banner,
  ciBar,
  ciText,
  h,
  metricName,
  ms,
  num,
  pValue,
  section,
  signed,
  table,
  usd,
  withCi,
} from './dom.js';
import { VirtualTable } from './virtual.js';

type Json = Record<string, unknown>;
function head(title: string, facts: [string, string, string?][]): HTMLElement {
  return h(
    'header',
    { class: 'page-head' },
    h('h1', null, title),
    h(
      'dl',
      { class: 'facts' },
      facts.flatMap(([k, v, testid]) => [h('dt', null, k), h('dd', { 'data-testid': testid }, v)]),
    ),
  );
}

/** The interval bars of a column share one scale: the values' and intervals' extent. */
function extent(values: (MetricValue | null)[]): [number, number] {
  const all = values
    .flatMap((m) => (m ? [m.value, ...(m.ci ?? [])] : []))
    .filter((v): v is number => typeof v === 'number');
  if (all.length === 0) return [0, 1];
  const lo = Math.min(...all);
  const hi = Math.max(...all);
  const pad = (hi - lo || 0.1) * 0.1;
  return [lo - pad, hi + pad];
}

function deltaBar(d: { delta: number; ci: [number, number] }): HTMLElement {
  const m = Math.max(Math.abs(d.ci[0]), Math.abs(d.ci[1]), Math.abs(d.delta), 0.01);
  return h('span', { class: 'delta-bar' }, ciBar(d.delta, d.ci, -m * 1.1, m * 1.1));
}

export function sweepPage(s: Json): HTMLElement[] {
  const variants = s.variants as {
    name: string;
    runId: string;
    backends: string[];
    simulated: boolean;
    rank: number | null;
    tied: boolean;
    rankValue: MetricValue | null;
    counts: { items: number; scored: number };
    /** The primary scorer's share of its items scored (absent in older sweeps). */
    coverage?: MetricValue;
    costUsd: number;
    per10kUsd: number | null;
    /** False: the variant called a model without a price (absent in older sweeps: priced). */
    priced?: boolean;
    unpriced?: string[];
    latencyMs: { p50: number | null; p95: number | null };
    pareto: boolean;
    comparison?: {
      paired: number;
      costDeltaUsd: number;
      promptChanges: { path: string }[];
      scores: Record<
        string,
        {
          coverage?: PairedDelta;
          deltas: Record<string, PairedDelta>;
          mcnemarPValue?: number;
          flipped: Record<string, number>;
        }
      >;
    };
    gate?: { conditions: { condition: string; passed: boolean; reason: string }[]; required: boolean };
    sequential?: SequentialLineInput;
    verdict: string;
  }[];
  const rankBy = s.rankBy as { metric: string; better: string; over?: string };
  const gate = s.gate as { conditions: string[]; required: string[]; failedRequired: string[] } | undefined;
  const outcome = gate ? gateOutcome({ gate, variants }) : undefined;
  const out: HTMLElement[] = [];
  if (s.notice) out.push(banner('sim', String(s.notice)));
  if (gate && gate.failedRequired.length > 0)
    out.push(banner('bad', `REQUIRED GATE FAILED for ${gate.failedRequired.join(', ')}`));
  out.push(
    head(`Assay sweep — ${String(s.suite)}`, [
      ['sweep', String(s.sweepId), 'sweep-id'],
      ['task', String(s.task)],
      ['dataset', String(s.dataset)],
      ['baseline', String(s.baseline)],
      ['ranked by', `${metricName(rankBy.metric)} (${rankBy.better} is better; 95% CI)`],
      ['ranked over', rankBy.over ?? "each variant's own scored items"],
      ['time', `${String(s.createdAt)} → ${String(s.finishedAt)}`],
    ]),
  );
  const [lo, hi] = extent(variants.map((v) => v.rankValue));
  const verdict = (v: (typeof variants)[number]) =>
    v.verdict === 'baseline'
      ? 'baseline'
      : v.verdict === 'no gate'
        ? '-'
        : `${v.verdict === 'promoted' ? 'PROMOTED' : 'NOT PROMOTED'}${v.gate?.required ? ' (required)' : ''}`;
  out.push(
    section(
      'Variants, best first',
      table(
        [
          'rank',
          'variant',
          'backends',
          metricName(rankBy.metric),
          '95% CI',
          '',
          'cost/10K',
          'p50',
          'p95',
          'scored',
          'coverage',
          'Pareto',
          'gate',
        ],
        variants.map((v) => [
          v.rank === null ? '-' : `${v.rank}${v.tied ? '=' : ''}`,
          h(
            'span',
            null,
            v.name,
            v.simulated && s.simulated === 'mixed' ? h('span', { class: 'badge badge-sim' }, 'SIM') : null,
          ),
          v.backends.join(' ') || '(given)',
          h('span', { class: 'figure-value', 'data-variant': v.name }, num(v.rankValue?.value ?? null)),
          ciText(v.rankValue?.ci),
          ciBar(v.rankValue?.value ?? null, v.rankValue?.ci, lo, hi),
          v.priced === false ? 'unpriced' : v.per10kUsd === null ? 'n/a' : usd(v.per10kUsd),
          ms(v.latencyMs.p50),
          ms(v.latencyMs.p95),
          `${v.counts.scored}/${v.counts.items}`,
          num(v.coverage?.value ?? null),
          v.pareto ? '★' : '',
          h(
            'span',
            { class: v.verdict === 'promoted' ? 'good' : v.verdict === 'not promoted' ? 'bad' : '' },
            verdict(v),
          ),
        ]),
        'grid ranked',
      ),
    ),
  );
  const unpricedVariants = variants.filter((v) => v.priced === false);
  if (unpricedVariants.length > 0)
    out.push(
      h(
        'p',
        { class: 'note', 'data-testid': 'unpriced-variants' },
        `Unpriced: ${unpricedVariants.map((v) => `${v.name} (${(v.unpriced ?? []).join(', ')})`).join('; ')} called a model without a price: its cost is unknown, so it is left off the Pareto front and the chart.`,
      ),
    );
  const points = variants
    .filter((v) => v.priced !== false && v.per10kUsd !== null && typeof v.rankValue?.value === 'number')
    .map((v) => ({ x: v.per10kUsd!, y: v.rankValue!.value!, label: v.name, front: v.pareto }));
  if (points.length > 0) {
    out.push(
      section(
        'Quality against cost',
        scatter(
          `${metricName(rankBy.metric)} against cost per 10K items`,
          points,
          'cost per 10K items ($)',
          metricName(rankBy.metric),
          'On the Pareto front (green): no other variant is as good and cheaper, or better and as cheap.',
        ),
      ),
    );
  }
  const rows = variants.flatMap((v) =>
    Object.entries(v.comparison?.scores ?? {}).flatMap(([scorer, sc]) =>
      withCoverage(sc).map(([metric, d]) => [
        v.name,
        `${scorer} ${metricName(metric)}`,
        signed(d.delta),
        d.reason ?? `[${signed(d.ci[0])}, ${signed(d.ci[1])}]`,
        d.reason ? '' : deltaBar(d),
        d.reason ? 'n/a' : pValue(d.pValue),
        sc.mcnemarPValue === undefined ? '' : pValue(sc.mcnemarPValue),
        `${sc.flipped.fixed ?? 0} fixed, ${sc.flipped.broken ?? 0} broken, ${sc.flipped.changed ?? 0} changed`,
      ]),
    ),
  );
  if (rows.length > 0) {
    out.push(
      section(
        `Against the baseline ${String(s.baseline)}`,
        h(
          'p',
          { class: 'muted' },
          "Coverage: each side's share of the paired items it scored. Every other figure is over the items both scored; Δ = variant − baseline, with its 95% CI (proportions: Newcombe's paired interval; the rest: paired bootstrap).",
        ),
        table(
          ['variant', 'figure', 'Δ', '95% CI', '', 'p', 'McNemar p', 'flipped'],
          rows,
          'grid against-baseline',
        ),
      ),
    );
  }
  if (gate) {
    out.push(
      section(
        'Gate',
        h(
          'p',
          null,
          `Conditions: ${gate.conditions.join('  AND  ')}; required: ${gate.required.length > 0 ? gate.required.join(', ') : 'none'}`,
        ),
        table(
          ['variant', 'condition', 'passed', 'figures'],
          variants.flatMap((v) =>
            (v.gate?.conditions ?? []).map((c) => [
              v.name,
              h('code', null, c.condition),
              h('span', { class: c.passed ? 'good' : 'bad' }, c.passed ? 'pass' : 'FAIL'),
              c.reason,
            ]),
          ),
          'grid gate',
        ),
        ...variants
          .filter((v) => v.sequential)
          .map((v) =>
            h(
              'p',
              { class: 'note', 'data-testid': 'sequential-gate' },
              `${v.name}: ${sequentialLine(v.sequential!)}`,
            ),
          ),
        h(
          'p',
          { class: outcome!.tone === 'neutral' ? null : outcome!.tone, 'data-testid': 'gate-outcome' },
          outcome!.text,
        ),
      ),
    );
  }
  return out;
}

export function comparisonPage(c: Json): HTMLElement[] {
  const base = c.base as {
    runId: string;
    suite: string;
    dataset: string;
    startedAt: string;
    backends: string[];
  };
  const candidate = c.candidate as typeof base;
  const items = c.items as { paired: number; onlyBase: number; onlyCandidate: number; changed?: number };
  const cost = c.cost as { base: number; candidate: number; delta: number };
  const promptChanges = c.promptChanges as { path: string; base?: string; candidate?: string }[];
  const scores = c.scores as Record<
    string,
    {
      kind: string;
      n: number;
      coverage?: PairedDelta;
      deltas: Record<string, PairedDelta>;
      mcnemar?: { b: number; c: number; pValue: number; method: string };
      flipped: {
        itemId: string;
        row: number;
        gold?: string;
        input: Record<string, string>;
        base: { value: string; reason?: string; status: string };
        candidate: { value: string; reason?: string; status: string };
        kind: string;
      }[];
    }
  >;
  const out: HTMLElement[] = [];
  if (c.simulated) out.push(banner('sim', String(c.notice ?? 'SIMULATED')));
  if (items.changed)
    out.push(
      banner(
        'warn',
        `Dataset changes: ${items.changed} changed, ${items.onlyCandidate} added, ${items.onlyBase} removed. A changed item has the same id in both runs but another input or gold: it is not paired.`,
      ),
    );
  if (base.dataset !== candidate.dataset)
    out.push(banner('warn', `The runs used different datasets: ${base.dataset} vs ${candidate.dataset}`));
  out.push(
    head(`Assay comparison — ${base.suite} → ${candidate.suite}`, [
      ['base', `${base.runId} (started ${base.startedAt}; ${answeredBy(base)})`, 'base-run'],
      [
        'candidate',
        `${candidate.runId} (started ${candidate.startedAt}; ${answeredBy(candidate)})`,
        'candidate-run',
      ],
      [
        'items',
        `${items.paired} paired, ${items.onlyBase} only in base (removed), ${items.onlyCandidate} only in candidate (added)${items.changed ? `, ${items.changed} changed (not paired)` : ''}`,
        'items',
      ],
      [
        'cost',
        `base ${usd(cost.base)}, candidate ${usd(cost.candidate)}, Δ ${cost.delta >= 0 ? '+' : '-'}${usd(Math.abs(cost.delta))}`,
      ],
      [
        'prompt changes',
        promptChanges.length === 0
          ? 'none'
          : promptChanges
              .map((p) => `${p.path}: ${p.base ?? '(none)'} → ${p.candidate ?? '(none)'}`)
              .join('; '),
      ],
    ]),
  );
  for (const [name, s] of Object.entries(scores)) {
    const kinds: Record<string, number> = { fixed: 0, broken: 0, changed: 0 };
    for (const f of s.flipped) kinds[f.kind] = (kinds[f.kind] ?? 0) + 1;
    const parts: (HTMLElement | null)[] = [
      Object.keys(s.deltas).length > 0 || s.coverage
        ? table(
            ['metric', 'base', 'candidate', 'Δ', '95% CI of Δ', '', 'p'],
            withCoverage(s).map(([metric, d]) => [
              metricName(metric),
              num(d.base),
              num(d.candidate),
              h('span', { class: 'figure-value', 'data-metric': `${name}.${metric}` }, signed(d.delta)),
              d.reason ?? `[${signed(d.ci[0])}, ${signed(d.ci[1])}]`,
              d.reason ? '' : deltaBar(d),
              d.reason ? 'n/a' : pValue(d.pValue),
            ]),
          )
        : h('p', null, 'No paired figures: no paired item has what this scorer needs on both sides.'),
      s.mcnemar
        ? h(
            'p',
            null,
            `McNemar: b ${s.mcnemar.b} (base right only), c ${s.mcnemar.c} (candidate right only), p ${pValue(s.mcnemar.pValue)} (${s.mcnemar.method})`,
          )
        : null,
      h(
        'p',
        { 'data-testid': `flipped-${name}` },
        `Flipped items (${s.flipped.length}): ${kinds.fixed} fixed, ${kinds.broken} broken, ${kinds.changed} changed`,
      ),
    ];
    if (s.flipped.length > 0) {
      const flipped = s.flipped;
      const detail = h('aside', { class: 'detail', hidden: true, 'aria-label': 'flipped item' });
      const all = Uint32Array.from(flipped.keys());
      const vt = new VirtualTable(
        [
          {
            label: 'row',
            width: '60px',
            cell: (i) => String(flipped[i]!.row),
            sortKey: (i) => flipped[i]!.row,
          },
          {
            label: 'id',
            width: 'minmax(80px, 1fr)',
            cell: (i) => flipped[i]!.itemId,
            sortKey: (i) => flipped[i]!.itemId,
          },
          {
            label: 'kind',
            width: '80px',
            cell: (i) => h('span', { class: `badge badge-${flipped[i]!.kind}` }, flipped[i]!.kind),
            sortKey: (i) => flipped[i]!.kind,
          },
          { label: 'gold', width: 'minmax(60px, 1fr)', cell: (i) => flipped[i]!.gold ?? '' },
          { label: 'base', width: 'minmax(80px, 1fr)', cell: (i) => flipped[i]!.base.value },
          { label: 'candidate', width: 'minmax(80px, 1fr)', cell: (i) => flipped[i]!.candidate.value },
          {
            label: 'candidate reason',
            width: 'minmax(160px, 3fr)',
            cell: (i) => (flipped[i]!.candidate.reason ?? '').slice(0, 300),
          },
        ],
        all,
        (i) => {
          const f = flipped[i]!;
          detail.replaceChildren(
            h(
              'div',
              { class: 'detail-head' },
              h('h3', null, `Item ${f.itemId} (${f.kind})`),
              h('button', { type: 'button', class: 'close', onclick: () => (detail.hidden = true) }, '×'),
            ),
            h('p', { class: 'muted' }, `row ${f.row} · gold ${f.gold ?? '-'}`),
            ...Object.entries(f.input).map(([k, v]) =>
              h('div', { class: 'field' }, h('h4', null, `input: ${k}`), h('pre', null, v)),
            ),
            ...(['base', 'candidate'] as const).map((side) =>
              h(
                'div',
                { class: 'field' },
                h('h4', null, `${side}: ${f[side].value} [${f[side].status}]`),
                h('pre', null, f[side].reason ?? ''),
              ),
            ),
          );
          detail.hidden = false;
        },
        undefined,
        Math.min(420, 40 + flipped.length * 28),
      );
      parts.push(vt.element, detail);
    }
    out.push(
      section(
        `Scorer ${name} (${s.kind}${name === c.primaryScorer ? ', primary' : ''}; n ${s.n} paired)`,
        parts,
      ),
    );
  }
  return out;
}

export function leaderboardPage(tables: Json[]): HTMLElement[] {
  const out: HTMLElement[] = [
    head('Assay leaderboard', [
      ['tables', `${tables.length} dataset${tables.length === 1 ? '' : 's'}`, 'tables'],
    ]),
  ];
  if (tables.length === 0) out.push(h('p', null, 'No finished runs.'));
  for (const t of tables) {
    const entries = t.entries as LeaderboardEntry[];
    const metrics = [...new Set(entries.flatMap((e) => Object.keys(e.metrics)))];
    const ranked = t.rankedBy as string | null;
    const [lo, hi] = extent(entries.map((e) => (ranked ? (e.metrics[ranked] ?? null) : null)));
    const parts: HTMLElement[] = [];
    if (t.mixed)
      parts.push(
        banner(
          'sim',
          'MIXED: some runs are simulated (SIM) and some real; simulated figures measure nothing about a model.',
        ),
      );
    parts.push(
      table(
        [
          '#',
          'run',
          'suite',
          'backends',
          'prompts',
          ...metrics.map(metricName),
          ...(ranked ? [''] : []),
          'cost/10K',
          'p50',
          'scored',
          'finished',
        ],
        entries.map((e, k) => [
          String(k + 1),
          h('span', null, e.runId, e.simulated ? h('span', { class: 'badge badge-sim' }, 'SIM') : null),
          e.suite,
          e.backends.join(' ') || '(given)',
          h('code', null, e.promptVersion),
          ...metrics.map((m) => {
            const v = e.metrics[m];
            return v ? withCi(v.value, v.ci) : 'n/a';
          }),
          ...(ranked ? [ciBar(e.metrics[ranked]?.value ?? null, e.metrics[ranked]?.ci, lo, hi)] : []),
          e.priced === false ? 'unpriced' : usd(e.per10kUsd),
          ms(e.p50LatencyMs),
          `${e.scored}/${e.items}`,
          e.finishedAt,
        ]),
        'grid ranked',
      ),
    );
    const points = entries
      .filter(
        (e) =>
          ranked &&
          e.priced !== false &&
          e.per10kUsd !== null &&
          typeof e.metrics[ranked]?.value === 'number',
      )
      .map((e) => ({ x: e.per10kUsd!, y: e.metrics[ranked!]!.value!, label: e.runId, front: false }));
    if (ranked && points.length > 1) {
      parts.push(
        scatter(
          `${metricName(ranked)} against cost per 10K items`,
          points,
          'cost per 10K items ($)',
          metricName(ranked),
        ),
      );
    }
    out.push(
      section(`Dataset ${String(t.dataset)}${ranked ? ` — ranked by ${metricName(ranked)}` : ''}`, parts),
    );
  }
  return out;
}

/**
 * A scorer's paired figures with its coverage first: each side's share of the paired items it
 * scored, then the deltas over the items both scored.
 */
function withCoverage(s: {
  coverage?: PairedDelta;
  deltas: Record<string, PairedDelta>;
}): [string, PairedDelta][] {
  return [
    ...(s.coverage ? [['coverage (scored share)', s.coverage] as [string, PairedDelta]] : []),
    ...Object.entries(s.deltas),
  ];
}
