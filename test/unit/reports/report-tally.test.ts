/**
 * A run's report tallied in parts: each part (a stretch of consecutive results in report order)
 * tallied apart, saved as bytes and loaded back, then the parts merged in order, gives the report
 * one tally over every result gives, for every family and every way of cutting the run: empty
 * parts, parts of one result, a part whose first item carries the first gold target. The results
 * are the example suites' own, run in-process on the simulator.
 */
import { join } from 'node:path';
import { deserialize, serialize } from 'node:v8';
import { describe, expect, it } from 'vitest';
import { runLocal } from '../../../cli/local-run.js';
import { LocalRunStore } from '../../../shared/adapters/local/local-run-store.js';
import type { AnyTaskFamily } from '../../../shared/family/types.js';
import { mulberry32 } from '../../../shared/lib/metrics/index.js';
import { failedResult, type ItemResult, type RunRecord } from '../../../shared/model/model.js';
import type { Report } from '../../../shared/model/report.js';
import { taskFor } from '../../../shared/registry/registry.js';
import { validateSuite } from '../../../shared/registry/suite.js';
import { buildReport, ReportTally, reportOrder } from '../../../shared/reports/report.js';
import { REPO, tempDir } from '../../helpers.js';

const AT = '2026-01-01T00:00:00.000Z';

/**
 * The only figures a merged tally may give other than one pass's: dollar sums and means of
 * fractional scores kept as running sums. Each part's sum is rounded on its own before the parts
 * are added, so these agree to within their last bits (a relative 1e-12), not to the last bit.
 * Every other figure — counts, tables, distributions, every bootstrap interval (the columns are
 * appended in report order, so the resamples are the same), latency percentiles, reliability,
 * length bias — must be equal, keys in the same order.
 */
const FLOAT_SUMS = [
  /^cost\.(totalUsd|perItemUsd|per10kUsd|savedUsd)$/,
  /^cost\.byStage\.[^.]+\.usd$/,
  /^cost\.batch\.savedUsd$/,
  /^metrics\.method\.(accuracyVsCost\.\d+|fusions\.[^.]+)\.(costUsd|per10kUsd)$/,
  /^metrics\.qa\.savedUsd$/,
  /^metrics\.cleanup\.(heuristic\.(exactMatchRate|tokenF1Avg|ruleMatchAvg|combined)|combinedRanking)$/,
  /^metrics\.summarization\.(meanFactualErrors|meanKeyOmissions)$/,
];

/** Where `actual` differs from `expected` (values, array lengths, keys and their order). */
function differences(actual: unknown, expected: unknown, path = ''): string[] {
  if (typeof expected === 'number' && typeof actual === 'number') {
    if (Object.is(actual, expected)) return [];
    const close = Math.abs(actual - expected) <= 1e-12 * Math.max(Math.abs(actual), Math.abs(expected));
    return close && FLOAT_SUMS.some((sum) => sum.test(path)) ? [] : [`${path}: ${actual} ≠ ${expected}`];
  }
  if (Array.isArray(expected) && Array.isArray(actual)) {
    if (actual.length !== expected.length) return [`${path}: ${actual.length} items ≠ ${expected.length}`];
    return expected.flatMap((value, i) => differences(actual[i], value, path ? `${path}.${i}` : `${i}`));
  }
  if (expected && actual && typeof expected === 'object' && typeof actual === 'object') {
    const keys = Object.keys(expected);
    if (Object.keys(actual).join() !== keys.join())
      return [`${path}: keys ${Object.keys(actual).join()} ≠ ${keys.join()}`];
    return keys.flatMap((key) =>
      differences(
        (actual as Record<string, unknown>)[key],
        (expected as Record<string, unknown>)[key],
        path ? `${path}.${key}` : key,
      ),
    );
  }
  return Object.is(actual, expected) ? [] : [`${path}: ${String(actual)} ≠ ${String(expected)}`];
}

interface Scenario {
  name: string;
  suite: string;
  sample?: number;
  repeats?: number;
  /** Invalid rows first, no gold before a point, a column first met late (see `withEdges`). */
  edges?: boolean;
  /** Three annotators' labels on the items from a fifth of the run on (see `withAnnotators`). */
  annotators?: boolean;
}

const SCENARIOS: Scenario[] = [
  { name: 'GEC baseline', suite: 'quickstart', sample: 120 },
  { name: 'GEC escalation', suite: 'gec-escalation-en' },
  { name: 'GEC ensemble', suite: 'gec-ensemble-de' },
  { name: 'GEC modular', suite: 'gec-modular-en' },
  { name: 'GEC agent', suite: 'gec-agent-ua', sample: 50 },
  { name: 'QA with audit', suite: 'physics-qa' },
  { name: 'QA without audit', suite: 'mmlu-physics' },
  { name: 'cleanup', suite: 'dictation-cleanup' },
  { name: 'summarization against human labels', suite: 'summedits', sample: 120 },
  { name: 'summarization against references', suite: 'legal-summaries' },
  { name: 'judge with labels', suite: 'reply-tone' },
  { name: 'judge with labels, gold from the middle on', suite: 'reply-tone', edges: true },
  { name: 'judge with a score and threshold', suite: 'answer-helpfulness' },
  {
    name: 'judge with a score and threshold, gold from the middle on',
    suite: 'answer-helpfulness',
    edges: true,
  },
  { name: 'pairwise judge', suite: 'pairwise-preference' },
  {
    name: 'judge with gold on some items (prediction-powered estimates)',
    suite: 'fewer-labels',
    sample: 400,
  },
  { name: 'labels, run.repeats 3', suite: 'reply-tone', repeats: 3 },
  { name: 'scores, run.repeats 3', suite: 'answer-helpfulness', repeats: 3, edges: true },
  { name: 'GEC, run.repeats 3', suite: 'quickstart', sample: 40, repeats: 3 },
  { name: 'judge with labels, three annotators', suite: 'reply-tone', annotators: true },
  {
    name: 'judge with a score, three annotators',
    suite: 'answer-helpfulness',
    annotators: true,
    edges: true,
  },
];

/** An example suite run on the simulator: its run record and its results in report order. */
async function exampleRun(scenario: Scenario): Promise<{ run: RunRecord; results: ItemResult[] }> {
  const dir = await tempDir('assay-tally-');
  const { run, outDir } = await runLocal({
    suitePath: join(REPO, 'examples', `${scenario.suite}.suite.json`),
    simulate: true,
    fresh: true,
    env: {},
    outDir: join(dir, 'run'),
    cachePath: join(dir, 'cache.jsonl'),
    ...(scenario.sample ? { sample: { n: scenario.sample, seed: 7 } } : {}),
    ...(scenario.repeats ? { repeats: scenario.repeats } : {}),
  });
  const results: ItemResult[] = [];
  for await (const result of new LocalRunStore(outDir, { checkSuite: validateSuite }).results(run.runId))
    results.push(result);
  return { run, results: reportOrder(results) };
}

/** Where `withEdges` changes a run of `n` results. */
const edgesOf = (n: number) => ({
  usable: 2,
  gold: Math.floor(n * 0.4),
  stray: Math.floor(n * 0.55),
  column: Math.floor(n * 0.7),
  tail: Math.floor(n * 0.85),
});

/** An invalid row in place of `result`: its raw record's columns, not the dataset's. */
const invalidRow = (result: ItemResult, input: Record<string, string>): ItemResult =>
  failedResult(
    { runId: result.runId, itemId: result.itemId, row: result.row, input },
    { kind: 'invalid_row', message: `row ${result.row}: unreadable` },
    new Date(AT),
  );

/**
 * The results with the run's edges moved: the first two are invalid rows, and one more in the
 * middle; the items before `gold` and from `tail` on have no gold (so the first target comes
 * mid-run, and parts after the last one have none); the items from `column` on carry an input
 * column met nowhere before.
 */
function withEdges(results: readonly ItemResult[]): ItemResult[] {
  const { usable, gold, stray, column, tail } = edgesOf(results.length);
  return results.map((result, i) => {
    if (i < usable) return invalidRow(result, { line: `${i}`, raw: 'a,b' });
    if (i === stray) return invalidRow(result, { line: `${i}`, stray: 'c' });
    const { gold: _, ...withoutGold } = result;
    const edged = i < gold || i >= tail ? withoutGold : { ...result };
    return i >= column ? { ...edged, input: { ...edged.input, note: `seen late ${i}` } } : edged;
  });
}

/**
 * The results with three annotators' labels each from a fifth of the run on (so the first parts
 * have none): the gold, another of the item's values met in the run, or a blank, chosen by a
 * seeded draw.
 */
function withAnnotators(results: readonly ItemResult[]): ItemResult[] {
  const random = mulberry32(5);
  const golds = [...new Set(results.flatMap((r) => (r.gold === undefined ? [] : [r.gold])))];
  return results.map((result, i) => {
    if (i < Math.floor(results.length / 5) || result.gold === undefined) return result;
    const annotations = [0, 1, 2].map(() => {
      const draw = random();
      return draw < 0.6 ? result.gold! : draw < 0.9 ? golds[Math.floor(random() * golds.length)]! : '';
    });
    return { ...result, annotations };
  });
}

/** Cut points → consecutive parts `[start, end)`; a repeated point makes an empty part. */
function partsOf(n: number, cuts: number[]): [number, number][] {
  const points = [0, ...[...cuts].sort((a, b) => a - b), n];
  return points.slice(1).map((end, i) => [points[i]!, end]);
}

/** The ways each run is cut: empty parts at both ends, parts of one result, the edges, and seeded random cuts. */
function splitsOf(n: number, edges: boolean): [string, [number, number][]][] {
  const random = mulberry32(n + 1);
  const randomCuts = (count: number) => Array.from({ length: count }, () => Math.floor(random() * (n + 1)));
  const singles = Array.from({ length: Math.min(n, 12) }, (_, i) => i + 1);
  const { usable, gold, stray, column, tail } = edgesOf(n);
  return [
    ['an empty part first and last', partsOf(n, [0, n])],
    ['parts of one result', partsOf(n, singles)],
    ['halves', partsOf(n, [Math.floor(n / 2)])],
    ...(edges
      ? ([['at the edges', partsOf(n, [usable, gold, gold, stray, stray + 1, column, tail])]] as [
          string,
          [number, number][],
        ][])
      : []),
    ...[1, 2, 3].map((k): [string, [number, number][]] => [`random ${k}`, partsOf(n, randomCuts(1 + k * 2))]),
  ];
}

function tallyOf(run: RunRecord, family: AnyTaskFamily, results: readonly ItemResult[]): ReportTally {
  const tally = new ReportTally(run, family);
  for (const result of results) tally.add(result);
  return tally;
}

/** Each part tallied apart, saved as bytes and read back, then merged in order. */
function mergedParts(
  run: RunRecord,
  family: AnyTaskFamily,
  results: readonly ItemResult[],
  parts: [number, number][],
): ReportTally {
  const [first, ...rest] = parts.map(([start, end]) =>
    ReportTally.fromBytes(run, family, tallyOf(run, family, results.slice(start, end)).toBytes()),
  );
  for (const part of rest) first!.merge(part);
  return first!;
}

/** The report files' layout as the files read it. */
function layoutOf(tally: ReportTally, family: AnyTaskFamily, run: RunRecord) {
  const scorers = Object.keys(family.scorers(run.suite));
  return {
    inputs: tally.layout.inputColumns(),
    binary: Object.fromEntries(scorers.map((name) => [name, tally.layout.binary(name)])),
  };
}

describe('a report tallied in parts', () => {
  it.each(SCENARIOS)('$name: the same report as one tally, however the run is cut', async (scenario) => {
    const ran = await exampleRun(scenario);
    const { run } = ran;
    const edged = scenario.edges ? withEdges(ran.results) : ran.results;
    const results = scenario.annotators ? withAnnotators(edged) : edged;
    const family = taskFor(run.suite);
    expect(results.length).toBeGreaterThan(4);

    const whole = await buildReport(run, results, family, AT);
    const one = tallyOf(run, family, results);
    // One tally, saved and read back, saves the same state (typed columns of the same widths)
    // and gives the same report, to the last bit.
    const bytes = one.toBytes();
    const loaded = ReportTally.fromBytes(run, family, bytes);
    expect(deserialize(loaded.toBytes())).toStrictEqual(deserialize(bytes));
    expect(differences(await loaded.report(AT), whole)).toEqual([]);
    expect(JSON.stringify(await one.report(AT))).toBe(JSON.stringify(whole));
    // Gold on some items by design: the PPI figures are there to be compared part by part.
    if (scenario.suite === 'fewer-labels') expect(whole.scores.label?.ppi?.nUnlabelled).toBeGreaterThan(0);
    if (scenario.annotators) {
      const ceiling = Object.values(whole.scores).map((s) => s.humanAgreement);
      expect(ceiling.every((h) => h !== undefined && h.annotators === 3 && h.alpha.value !== null)).toBe(
        true,
      );
    }

    const layout = layoutOf(one, family, run);
    if (scenario.edges) {
      // The invalid rows' columns give way to the dataset's; the late column comes last.
      expect(layout.inputs).not.toContain('raw');
      expect(layout.inputs).not.toContain('stray');
      expect(layout.inputs.at(-1)).toBe('note');
    }
    for (const [how, parts] of splitsOf(results.length, scenario.edges ?? false)) {
      const merged = mergedParts(run, family, results, parts);
      const report: Report = await merged.report(AT);
      expect({ how, differences: differences(report, whole) }).toEqual({ how, differences: [] });
      expect({ how, layout: layoutOf(merged, family, run) }).toEqual({ how, layout });
      expect({ how, layout: merged.layout.toState() }).toEqual({ how, layout: one.layout.toState() });
    }
  });

  it('reads only a tally of its own run and version', async () => {
    const { run, results } = await exampleRun({ name: 'labels', suite: 'reply-tone' });
    const family = taskFor(run.suite);
    const bytes = tallyOf(run, family, results.slice(0, 3)).toBytes();
    expect(() => ReportTally.fromBytes({ ...run, runId: 'another' }, family, bytes)).toThrow(
      /a report tally of run .* read for run another/,
    );
    expect(() => ReportTally.fromBytes(run, family, serialize({ version: 0 }))).toThrow(
      /a report tally of version 0; this Assay reads version 2/,
    );
  });
});
