/**
 * The CI reports on hand-built reports: JUnit XML that a strict reader accepts whatever the data
 * holds (markup, quotes, control characters, lone surrogates), with a case per run, per variant
 * and per gate condition failing exactly where the command exits 1; Markdown whose tables keep
 * their columns whatever a cell holds, `n/a` where there is no data, SIMULATED first.
 */
import { describe, expect, it } from 'vitest';
import type { Report, ScorerSummary } from '../../../shared/model/report.js';
import { comparisonJunit, runJunit, xmlEscape } from '../../../shared/reports/ci/junit.js';
import { comparisonMarkdown, mdTable, mdText, runMarkdown } from '../../../shared/reports/ci/markdown.js';
import type { Comparison } from '../../../shared/reports/compare-runs.js';
import { SIMULATED_NOTICE } from '../../../shared/reports/report.js';
import { sweepJunit, sweepMarkdown } from '../../../shared/sweeps/ci.js';
import type { SweepReport, SweepVariant } from '../../../shared/sweeps/sweep.js';
import { allNamed, parseXml, type XmlElement } from '../../xml.js';

/** Data as hostile as a dataset can make it: markup, quotes, a pipe, a line break, ESC, NUL, a lone surrogate. */
const HOSTILE = 'a<b>&"c\'|d\ne\x1b[2J\x00\ud800z';

const scorer = (overrides: Partial<ScorerSummary> = {}): ScorerSummary => ({
  kind: 'label',
  n: 90,
  unscored: { provider: 6, invalid_row: 4 },
  metrics: {
    accuracy: { value: 0.8, n: 90, ci: [0.7, 0.88] },
    macroF1: { value: null, n: 90, reason: 'undefined: one label everywhere' },
    kappa: { value: 0.41, n: 90, reason: 'too few items for an interval (n 90 < 200)' },
  },
  ...overrides,
});

function report(overrides: Partial<Report> = {}): Report {
  return {
    schemaVersion: 2,
    runId: 'tone-1',
    suite: 'tone',
    task: 'judge',
    config: {},
    backends: ['openai:gpt-4o-mini'],
    simulated: false,
    dataset: 'replies.csv',
    status: 'complete',
    missingItems: 0,
    startedAt: '2026-01-01T00:00:00.000Z',
    finishedAt: '2026-01-01T00:00:12.500Z',
    counts: {
      items: 100,
      scored: 90,
      failed: 10,
      invalidRows: 4,
      errors: 6,
      byFailure: { provider: 6, invalid_row: 4 },
    },
    primaryScorer: 'label',
    scores: { label: scorer() },
    metrics: {},
    cost: {
      totalUsd: 0.0123,
      per10kUsd: 1.23,
      perItemUsd: 0.000123,
      tokens: { input: 1000, output: 100, cached: 0 },
      byStage: {},
      calls: 96,
      cachedCalls: 0,
      savedUsd: 0,
    },
    latencyMs: { p50: 210, p95: 400, mean: 230, max: 500 },
    prompts: {},
    ...overrides,
  };
}

function variant(name: string, overrides: Partial<SweepVariant> = {}): SweepVariant {
  return {
    name,
    runId: `tone.${name}-1`,
    backends: ['openai:gpt-4o-mini'],
    config: {},
    simulated: true,
    rank: 1,
    tied: false,
    rankValue: { value: 0.8, n: 90, ci: [0.7, 0.88] },
    metrics: { accuracy: { value: 0.8, n: 90, ci: [0.7, 0.88] }, kappa: { value: null, n: 0 } },
    coverage: { value: 0.9, n: 100 },
    counts: report().counts,
    costUsd: 0.0123,
    per10kUsd: 1.23,
    priced: true,
    latencyMs: { p50: 210, p95: 400 },
    pareto: true,
    verdict: 'baseline',
    ...overrides,
  };
}

const comparisonOf = (costDeltaUsd: number): NonNullable<SweepVariant['comparison']> => ({
  paired: 96,
  promptChanges: [],
  costDeltaUsd,
  scores: {
    label: {
      coverage: {
        n: 96,
        base: 0.94,
        candidate: 0.9,
        delta: -0.04,
        ci: [-0.09, 0.01],
        pValue: 0.12,
        interval: 'newcombe',
        scored: { base: 90, candidate: 86 },
      },
      deltas: {
        accuracy: { delta: -0.05, ci: [-0.1, -0.01], pValue: 0.0004, interval: 'newcombe' },
        kappa: { delta: 0.02, ci: [-1, 1], pValue: 1, reason: 'too few items for an interval (n 86 < 200)' },
      },
      mcnemarPValue: 0.02,
      flipped: { fixed: 2, broken: 7, changed: 1 },
    },
  },
});

/** A simulated sweep: baseline `base`, `strict` required and failing, `loose` not required and failing, `good` promoted. */
function sweep(): SweepReport {
  const failing = (required: boolean): SweepVariant['gate'] => ({
    promoted: false,
    required,
    failed: ['accuracy >= baseline'],
    conditions: [
      {
        condition: 'accuracy >= baseline',
        passed: false,
        value: 0.75,
        against: 0.8,
        reason: `accuracy 0.75 fails >= baseline 0.8 ${HOSTILE}`,
      },
      {
        condition: 'error_rate <= 0.1',
        passed: true,
        value: 0.06,
        against: 0.1,
        reason: 'error_rate 0.06 meets <= 0.1',
      },
    ],
  });
  return {
    schemaVersion: 1,
    sweepId: 'tone-sweep-1',
    suite: 'tone',
    task: 'judge',
    dataset: 'replies.csv',
    baseline: 'base',
    primaryScorer: 'label',
    rankBy: { metric: 'accuracy', better: 'higher' },
    simulated: 'all',
    notice: SIMULATED_NOTICE,
    createdAt: '2026-01-01T00:00:00.000Z',
    finishedAt: '2026-01-01T00:01:00.000Z',
    variants: [
      variant('base'),
      variant('good', {
        verdict: 'promoted',
        comparison: comparisonOf(0.001),
        gate: {
          promoted: true,
          required: true,
          failed: [],
          conditions: [
            {
              condition: 'accuracy >= baseline',
              passed: true,
              value: 0.8,
              against: 0.8,
              reason: 'accuracy 0.8 meets >= 0.8',
            },
          ],
        },
      }),
      variant('strict', { verdict: 'not promoted', comparison: comparisonOf(-0.002), gate: failing(true) }),
      variant('loose', {
        verdict: 'not promoted',
        comparison: comparisonOf(0),
        gate: failing(false),
        rank: null,
        rankValue: null,
        coverage: { value: null, n: 0 },
      }),
    ],
    gate: {
      conditions: ['accuracy >= baseline', 'error_rate <= 0.1'],
      required: ['good', 'strict'],
      failedRequired: ['strict'],
    },
  } satisfies SweepReport;
}

const cases = (root: XmlElement) => allNamed(root, 'testcase');
const caseNamed = (root: XmlElement, name: string) => {
  const found = cases(root).find((c) => c.attributes.name === name);
  if (!found) throw new Error(`no test case ${name}: ${cases(root).map((c) => c.attributes.name)}`);
  return found;
};
const child = (e: XmlElement, name: string) => e.children.find((c) => c.name === name);

describe('xmlEscape', () => {
  it('leaves text a strict reader takes back: markup escaped, controls shown, lone surrogates replaced', () => {
    const xml = `<?xml version="1.0" encoding="UTF-8"?>\n<a b="${xmlEscape(HOSTILE, true)}">${xmlEscape(HOSTILE)}</a>`;
    const root = parseXml(xml);
    expect(root.attributes.b).toBe('a<b>&"c\'|d\ne\\x1b[2J\\x00\ufffdz');
    expect(root.text).toBe('a<b>&"c\'|d\ne\\x1b[2J\\x00\ufffdz');
    // The reader is strict: what escaping prevents, it refuses.
    expect(() => parseXml(`<?xml version="1.0" encoding="UTF-8"?>\n<a>${HOSTILE}</a>`)).toThrow(/XML/);
    expect(() => parseXml('<?xml version="1.0" encoding="UTF-8"?>\n<a>&#0;</a>')).toThrow(/cannot hold/);
    expect(() => parseXml('<?xml version="1.0" encoding="UTF-8"?>\n<a><b></a></b>')).toThrow(/closes/);
  });
});

describe('runJunit', () => {
  it('one passing case with the headline figures and the failed items counted in its output', () => {
    const root = parseXml(runJunit(report({ suite: HOSTILE })));
    expect(root.name).toBe('testsuites');
    expect(root.attributes).toMatchObject({ tests: '1', failures: '0', errors: '0', skipped: '0' });
    const suite = child(root, 'testsuite')!;
    expect(suite.attributes).toMatchObject({
      name: `assay run ${HOSTILE.replace('\x1b', '\\x1b').replace('\x00', '\\x00').replace('\ud800', '\ufffd')}`,
      time: '12.500',
    });
    const properties = Object.fromEntries(
      allNamed(suite, 'property').map((p) => [p.attributes.name, p.attributes.value]),
    );
    expect(properties).toMatchObject({ simulated: 'false', runId: 'tone-1', status: 'complete' });
    const [only] = cases(root);
    expect(child(only!, 'failure')).toBeUndefined();
    const out = child(only!, 'system-out')!.text;
    expect(out).toContain('items 100   scored 90   failed 10 (invalid rows 4, errors 6)');
    expect(out).toContain('failures by kind: provider 6, invalid_row 4');
    expect(out).toContain('label: accuracy 0.800  macro F1 n/a');
    expect(out).toContain('cost $0.0123  per 10K $1.2300  latency p50 210 ms');
  });

  it('says SIMULATED in the properties, the names and the output; fails a run that scored nothing or stopped', () => {
    const simulated = parseXml(
      runJunit(report({ simulated: true, notice: SIMULATED_NOTICE }), 'no item was scored'),
    );
    const suite = child(simulated, 'testsuite')!;
    expect(suite.attributes.name).toBe('assay run tone (SIMULATED)');
    expect(allNamed(suite, 'property').find((p) => p.attributes.name === 'simulated')?.attributes.value).toBe(
      'true',
    );
    const [run] = cases(simulated);
    expect(run!.attributes.name).toBe('run tone (SIMULATED)');
    expect(child(run!, 'system-out')!.text.split('\n')[0]).toBe(SIMULATED_NOTICE);
    expect(child(run!, 'failure')!.attributes).toEqual({
      message: 'no item was scored',
      type: 'RunUnscorable',
    });
    expect(simulated.attributes.failures).toBe('1');

    const stopped = parseXml(runJunit(report({ status: 'incomplete', missingItems: 5, finishedAt: null })));
    expect(child(cases(stopped)[0]!, 'failure')!.attributes.type).toBe('RunIncomplete');
    expect(child(stopped, 'testsuite')!.attributes.time).toBeUndefined();
  });
});

describe('sweepJunit', () => {
  const root = parseXml(sweepJunit(sweep(), { loose: `scored nothing ${HOSTILE}` }));

  it('a case per variant and per gate condition; failures exactly where the command exits 1', () => {
    expect(cases(root).map((c) => c.attributes.name)).toEqual([
      'variant base (SIMULATED)',
      'variant good (SIMULATED)',
      'good: accuracy >= baseline (SIMULATED)',
      'variant strict (SIMULATED)',
      'strict: accuracy >= baseline (SIMULATED)',
      'strict: error_rate <= 0.1 (SIMULATED)',
      'variant loose (SIMULATED)',
      'loose: accuracy >= baseline (SIMULATED)',
      'loose: error_rate <= 0.1 (SIMULATED)',
    ]);
    const state = (name: string) => {
      const c = caseNamed(root, `${name} (SIMULATED)`);
      return child(c, 'failure') ? 'failure' : child(c, 'skipped') ? 'skipped' : 'pass';
    };
    expect(state('variant base')).toBe('pass');
    expect(state('variant good')).toBe('pass');
    expect(state('variant strict')).toBe('failure');
    expect(state('strict: accuracy >= baseline')).toBe('failure');
    expect(state('strict: error_rate <= 0.1')).toBe('pass');
    // Not required: its failed condition is skipped, but scoring nothing fails it.
    expect(state('loose: accuracy >= baseline')).toBe('skipped');
    expect(state('variant loose')).toBe('failure');
    expect(child(root, 'testsuite')!.attributes).toMatchObject({ tests: '9', failures: '3', skipped: '1' });
  });

  it("failures carry the gate's reason; outputs the figures, failed items and the deltas", () => {
    const condition = child(caseNamed(root, 'strict: accuracy >= baseline (SIMULATED)'), 'failure')!;
    expect(condition.attributes.message).toBe(
      'accuracy 0.75 fails >= baseline 0.8 a<b>&"c\'|d\ne\\x1b[2J\\x00\ufffdz',
    );
    expect(condition.attributes.type).toBe('GateConditionFailed');
    const strict = caseNamed(root, 'variant strict (SIMULATED)');
    expect(child(strict, 'failure')!.attributes.message).toBe(
      'strict: NOT PROMOTED (required): failed accuracy >= baseline',
    );
    expect(child(strict, 'failure')!.text).toContain('accuracy >= baseline: accuracy 0.75 fails');
    const out = child(strict, 'system-out')!.text;
    expect(out.split('\n')[0]).toBe(SIMULATED_NOTICE);
    expect(out).toContain('failures by kind: provider 6, invalid_row 4');
    expect(out).toContain(
      "label: accuracy 0.800 [0.700, 0.880] (n 90); Cohen's kappa n/a (n 0); coverage 0.900 (90/100)",
    );
    expect(out).toContain('accuracy -0.050 [-0.100, -0.010] p=<0.001');
    expect(out).toContain('cost -$0.0020');
    const props = Object.fromEntries(
      allNamed(root, 'property').map((p) => [p.attributes.name, p.attributes.value]),
    );
    expect(props).toMatchObject({
      simulated: 'all',
      notice: SIMULATED_NOTICE,
      outcome: 'REQUIRED GATE FAILED for strict',
    });
  });
});

describe('comparisonJunit', () => {
  it('a passing case per scorer in common with its paired deltas; none in common fails', () => {
    const root = parseXml(comparisonJunit(comparison()));
    const [label] = cases(root);
    expect(label!.attributes.name).toBe('label: tone-2 vs tone-1 (SIMULATED)');
    expect(child(label!, 'failure')).toBeUndefined();
    const out = child(label!, 'system-out')!.text;
    expect(out).toContain('items: 96 paired, 2 only in base, 0 only in candidate');
    expect(out).toMatch(/accuracy\s+0\.800\s+0\.750\s+-0\.050\s+\[-0\.100, -0\.010\]\s+<0\.001/);
    expect(out).toContain('flipped items (1): 0 fixed, 1 broken, 0 changed');
    const none = parseXml(comparisonJunit({ ...comparison(), scores: {} }));
    expect(child(cases(none)[0]!, 'failure')!.attributes.type).toBe('NothingCompared');
  });
});

function comparison(): Comparison {
  const header = (runId: string) => ({
    runId,
    suite: 'tone',
    task: 'judge',
    dataset: 'replies.csv',
    startedAt: '2026-01-01T00:00:00.000Z',
    prompts: {},
    backends: ['sim:gpt-4o-mini'],
    simulated: true,
  });
  return {
    simulated: true,
    notice: 'SIMULATED: both runs were answered by the simulator',
    base: header('tone-1'),
    candidate: header('tone-2'),
    promptChanges: [],
    items: { paired: 96, onlyBase: 2, onlyCandidate: 0 },
    primaryScorer: 'label',
    scores: {
      label: {
        kind: 'label',
        n: 90,
        deltas: {
          accuracy: {
            n: 90,
            base: 0.8,
            candidate: 0.75,
            delta: -0.05,
            ci: [-0.1, -0.01],
            pValue: 0.0004,
            interval: 'newcombe',
          },
          kappa: {
            n: 90,
            base: 0.41,
            candidate: 0.43,
            delta: 0.02,
            ci: [-1, 1],
            pValue: 1,
            reason: 'too few items for an interval (n 90 < 200)',
          },
        },
        mcnemar: { b: 7, c: 2, statistic: 2, pValue: 0.18, method: 'exact' },
        flipped: [
          {
            itemId: `id|${HOSTILE}`,
            row: 3,
            input: {},
            base: { value: 'polite', status: 'scored' },
            candidate: { value: 'rude', status: 'scored' },
            kind: 'broken',
          },
        ],
      },
    },
    cost: { base: 0.01, candidate: 0.012, delta: 0.002 },
  } satisfies Comparison;
}

/** The cells of a Markdown table row, split where GitHub splits them (an unescaped `|`). */
const cellsOf = (row: string) =>
  row
    .slice(1, -1)
    .split(/(?<!\\)\|/)
    .map((c) => c.trim());

describe('Markdown', () => {
  it('mdText keeps a cell one cell on one line, markup escaped', () => {
    expect(mdText(HOSTILE)).toBe('a&lt;b&gt;&amp;"c\'\\|d<br>e\\\\x1b[2J\\\\x00\ud800z');
    const table = mdTable(['a|b', 'c'], [[HOSTILE, 'x\\|y']]);
    expect(table).toHaveLength(3);
    expect(table.map(cellsOf).map((cells) => cells.length)).toEqual([2, 2, 2]);
  });

  it('a run: SIMULATED banner first, headline metrics with CIs, n and coverage, n/a for no data, failed items, cost', () => {
    const md = runMarkdown(report({ simulated: true, notice: SIMULATED_NOTICE, suite: 'tone|x' }));
    const lines = md.split('\n');
    expect(lines[0]).toBe('## Assay run — tone\\|x (judge)');
    expect(lines[2]).toBe('> [!WARNING]');
    expect(lines[3]).toMatch(/^> \*\*SIMULATED\*\* — answers were fabricated/);
    expect(md).toContain('| label (primary) | accuracy | 0.800 | [0.700, 0.880] | 90 | 0.938 (90/96) |');
    expect(md).toContain(
      '| label (primary) | macro F1 | n/a | undefined: one label everywhere | 90 | 0.938 (90/96) |',
    );
    expect(md).toContain(
      "| label (primary) | Cohen's kappa | 0.410 | too few items for an interval (n 90 &lt; 200) |",
    );
    expect(md).toContain(
      'items 100 · scored 90 · failed 10 (invalid rows 4, errors 6) — failed by kind: provider 6, invalid_row 4',
    );
    expect(md).toContain('cost $0.0123 · per 10K $1.2300 · latency p50 210 ms');
    expect(runMarkdown(report())).not.toContain('SIMULATED');
    expect(runMarkdown(report(), 'no item was scored')).toContain('> **FAILED** — no item was scored');
  });

  it('a sweep: variants with CIs and verdicts, deltas with CIs and p-values, gate reasons, the outcome', () => {
    const md = sweepMarkdown(sweep());
    expect(md.split('\n').slice(2, 4)).toEqual([
      '> [!WARNING]',
      '> **SIMULATED** — answers were fabricated by the sim provider from the gold labels with noise; these scores measure nothing about a real model.',
    ]);
    expect(md).toContain(
      "| rank | variant | backends | accuracy (95% CI) | Cohen's kappa (95% CI) | n | coverage | cost | cost/10K | pareto | gate |",
    );
    expect(md).toContain(
      '| 1 | strict | openai:gpt-4o-mini | 0.800 [0.700, 0.880] | n/a | 90/100 | 0.900 (90/100) | $0.0123 | $1.2300 | ★ | NOT PROMOTED (required) |',
    );
    expect(md).toContain('| n/a | loose | openai:gpt-4o-mini | 0.800 [0.700, 0.880] | n/a | 90/100 | n/a |');
    expect(md).toContain('| strict | label | accuracy | -0.050 | [-0.100, -0.010] | &lt;0.001 | 96 |');
    expect(md).toContain(
      "| strict | label | Cohen's kappa | +0.020 | n/a (too few items for an interval (n 86 &lt; 200)) | n/a | 96 |",
    );
    expect(md).toContain('| strict | label | coverage | -0.040 | [-0.090, +0.010] | 0.120 | 96 |');
    expect(md).toContain('- **strict: NOT PROMOTED (required)**');
    expect(md).toContain(
      '  - **FAIL** accuracy &gt;= baseline: accuracy 0.75 fails &gt;= baseline 0.8 a&lt;b&gt;&amp;"c\'\\|d<br>e',
    );
    expect(md).toContain('**❌ REQUIRED GATE FAILED for strict**');
    // Every row of every table has as many cells as its header.
    const tables = md.split('\n\n').filter((block) => block.startsWith('|'));
    expect(tables).toHaveLength(2);
    for (const table of tables) {
      const rows = table.split('\n').map(cellsOf);
      for (const row of rows) expect(row).toHaveLength(rows[0]!.length);
    }
  });

  it('a comparison: paired deltas with CIs and p-values, McNemar, cost', () => {
    const md = comparisonMarkdown(comparison());
    expect(md).toContain('> **SIMULATED** — both runs were answered by the simulator');
    expect(md).toContain(
      '| label (primary) | accuracy | 0.800 | 0.750 | -0.050 | [-0.100, -0.010] | &lt;0.001 | 90 |',
    );
    expect(md).toContain("| label (primary) | Cohen's kappa | 0.410 | 0.430 | +0.020 | n/a (too few items");
    expect(md).toContain(
      '- **label**: McNemar p 0.180: no significant difference at 5%; flipped 0 fixed, 1 broken, 0 changed',
    );
    expect(md).toContain('base $0.0100 · candidate $0.0120 · Δ +$0.0020');
  });
});
