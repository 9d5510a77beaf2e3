/**
 * From the runs the model measured (one size, or two) to a run of `target` items: its wall
 * time, its AWS cost, and whether every function and every partition key would stay within
 * its limits. Each figure is projected by the rule its kind of work follows (kinds.ts), and the
 * rule is written next to it:
 *
 * - per-item costs scale with the items;
 * - the sustained rate stays what it was at the largest size (the fleet, the batch and the LLM
 *   latency do not change), unless a stage's steady rate is lower: ingest once chunks follow one
 *   another (a chunk's rows per the time between two chunks' starts), or the worker fleet;
 * - wall = the time to the first result + target / rate + the tail after the last result (the
 *   aggregation), the tail projected as a per-run figure;
 * - per batch, per pass: constant (the largest measured); with two sizes, a figure that grew by
 *   more than a quarter between them is fitted as a line instead;
 * - per chunk, per part: constant once the dataset fills a chunk; a dataset smaller than a chunk
 *   is scaled up to a full chunk in proportion to its bytes;
 * - per run: a line through two sizes aggregated the same way (in one pass or in parts), never
 *   below the larger; from one size, in proportion to the items (at most linear growth assumed);
 * - memory is the container's baseline plus the projected heap growth; /tmp as projected;
 * - a partition key's peak rate follows the rate items complete, which does not change.
 *
 * Anything that cannot be checked (a figure not measured, an aggregation mode the runs did not
 * exercise) counts as not within limits, with the reason.
 */
import { awsEnvSchema } from '../../../shared/adapters/aws/env.js';
import { FUNCTIONS, HEADROOM, PARTITION_LIMITS, type RunFigures, round } from './figures.js';
import type { Growth } from './kinds.js';

export interface ProjectedCheck {
  what: string;
  projected: number | null;
  /** 80 % of the limit. */
  allowed: number;
  within: boolean;
  rule: string;
}

export interface Projection {
  itemsPerSecond: number;
  /** What sets that rate. */
  rateSetBy: string;
  wallSeconds: number | null;
  awsCostUsd: number;
  withinLimits: boolean;
  /** The function (or key, or stage) and the limit it passes, the furthest past first; null when within. */
  limitingStage: string | null;
  /** Every reason it is not within limits. */
  reasons: string[];
  /** The check nearest its limit when every one passes. */
  closest: string | null;
  checks: ProjectedCheck[];
}

/** Results from which the aggregation goes in parts (the functions' default). */
export const IN_PARTS_FROM = awsEnvSchema.shape.ASSAY_AGGREGATE_IN_PARTS_FROM.parse(undefined) as number;

/** Projects `runs` (sorted by size, largest last) to `target` items. */
export function project(runs: readonly RunFigures[], target: number): Projection {
  const large = runs[runs.length - 1]!;
  const small = runs.length > 1 ? runs[0]! : undefined;
  const checks: ProjectedCheck[] = [];
  const reasons: string[] = [];

  // The rate measured, unless the stages' steady rates say a long run goes slower: ingest, once
  // chunks follow one another, or the worker fleet with full batches.
  const caps = [
    {
      rate: large.itemsPerSecond,
      why: `the sustained rate of the run of ${large.items.toLocaleString('en-US')}`,
    },
    ...(large.stages.ingestSteadyItemsPerSecond !== null && target > large.items
      ? [{ rate: large.stages.ingestSteadyItemsPerSecond, why: 'ingest, a chunk per chunk period' }]
      : []),
    ...(large.stages.workerFleetItemsPerSecond !== null
      ? [{ rate: large.stages.workerFleetItemsPerSecond, why: 'the worker fleet with full batches' }]
      : []),
  ];
  const cap = caps.reduce((a, b) => (b.rate < a.rate ? b : a));
  const rate = cap.rate;
  const tail = projectGrowth(
    'per run',
    target,
    large,
    small,
    (r) => r.basis.tailS,
    sameAggregation(large, small),
  );
  const head = large.basis.headS;
  const wallSeconds =
    rate > 0 && head !== null && tail.value !== null ? round(head + target / rate + tail.value, 1) : null;
  if (wallSeconds === null)
    reasons.push('the wall time cannot be projected: the run has no sustained rate or no report');

  const partsAtTarget = target >= IN_PARTS_FROM;
  if (partsAtTarget && !large.basis.aggregateInParts)
    reasons.push(
      `the aggregation of ${target.toLocaleString('en-US')} items goes in parts (from ${IN_PARTS_FROM.toLocaleString('en-US')} results), which the run of ${large.items.toLocaleString('en-US')} did not exercise: run the model at ${IN_PARTS_FROM.toLocaleString('en-US')} items or more`,
    );

  for (const fn of FUNCTIONS) {
    const figures = large.lambda[fn];
    const kinds = Object.entries(figures.byKind);
    if (kinds.length === 0) {
      reasons.push(`${fn}: no invocation measured, in the run or replayed`);
      continue;
    }
    for (const [kind, k] of kinds) {
      const same = kind.startsWith('aggregate:') ? sameAggregation(large, small) : true;
      const pick = (field: 'maxDurationS' | 'peakHeapMb' | 'peakTmpMb') => (r: RunFigures) =>
        r.lambda[fn].byKind[kind]?.[field] ?? null;
      const duration = projectGrowth(k.growth, target, large, small, pick('maxDurationS'), same);
      const heap = projectGrowth(k.growth, target, large, small, pick('peakHeapMb'), same);
      const tmp = projectGrowth(k.growth, target, large, small, pick('peakTmpMb'), same);
      const baseline = figures.baselineRssMb;
      const memory = heap.value === null || baseline === null ? null : baseline + heap.value;
      checks.push(
        check(`${kind} duration, s`, duration.value, HEADROOM * figures.timeoutS, duration.rule),
        check(
          `${kind} memory, MB`,
          memory,
          HEADROOM * figures.memoryMb,
          baseline === null
            ? 'the container baseline was not measured'
            : `baseline ${baseline} MB + heap: ${heap.rule}`,
        ),
        check(`${kind} /tmp, MB`, tmp.value, HEADROOM * figures.tmpMb, tmp.rule),
      );
    }
  }

  const hot = large.hottestKey;
  const keyRule = 'the peak of the run: a key’s rate follows the completion rate, which does not change';
  checks.push(
    check(
      `partition key ${hot?.key ?? '?'}: WRU/s`,
      hot ? hot.peakWruPerSecond : null,
      PARTITION_LIMITS.wru,
      keyRule,
      1,
    ),
    check(
      `partition key ${hot?.key ?? '?'}: RRU/s`,
      hot ? hot.peakRruPerSecond : null,
      PARTITION_LIMITS.rru,
      keyRule,
      1,
    ),
  );
  const throttled = runs.reduce((n, r) => n + r.throttled, 0);
  if (throttled > 0)
    reasons.push(`${throttled} requests were throttled by a partition's limit in the runs measured`);

  const failing = checks.filter((c) => !c.within);
  const ratio = (c: ProjectedCheck) =>
    c.projected === null ? Number.POSITIVE_INFINITY : c.projected / c.allowed;
  failing.sort((a, b) => ratio(b) - ratio(a));
  for (const c of failing)
    reasons.push(
      c.projected === null
        ? `${c.what}: cannot be checked (${c.rule})`
        : `${c.what}: ${c.projected} projected, over ${round(c.allowed, 1)} allowed (${c.rule})`,
    );
  const passing = checks.filter((c) => c.within).sort((a, b) => ratio(b) - ratio(a));
  return {
    itemsPerSecond: rate,
    rateSetBy: cap.why,
    wallSeconds,
    awsCostUsd: round(large.perItem.awsCostUsd * target, 2),
    withinLimits: reasons.length === 0,
    limitingStage: failing[0] ? failing[0].what : (reasons[0] ?? null),
    reasons,
    closest: passing[0]
      ? `${passing[0].what}: ${passing[0].projected} of ${round(passing[0].allowed, 1)} allowed`
      : null,
    checks,
  };
}

function check(
  what: string,
  projected: number | null,
  allowed: number,
  rule: string,
  digits = 2,
): ProjectedCheck {
  return {
    what,
    projected: projected === null ? null : round(projected, digits),
    allowed: round(allowed, 2),
    within: projected !== null && projected <= allowed,
    rule,
  };
}

/** Two runs aggregated the same way: both in one pass or both in parts. */
function sameAggregation(large: RunFigures, small: RunFigures | undefined): boolean {
  return small !== undefined && small.basis.aggregateInParts === large.basis.aggregateInParts;
}

/** A figure of `target` items by its growth rule; null when the runs do not have it. */
export function projectGrowth(
  growth: Growth,
  target: number,
  large: RunFigures,
  small: RunFigures | undefined,
  pick: (r: RunFigures) => number | null,
  comparable: boolean,
): { value: number | null; rule: string } {
  const a = small ? pick(small) : null;
  const b = pick(large);
  if (b === null) return { value: null, rule: 'not measured' };
  const line = () => {
    const slope = (b - a!) / (large.items - small!.items);
    return Math.max(b, b + slope * (target - large.items));
  };
  const n = (x: number) => x.toLocaleString('en-US');
  switch (growth) {
    case 'per batch':
    case 'per pass':
      if (a !== null && a > 0 && b > 1.25 * a)
        return {
          value: line(),
          rule: `${growth}, but it grew ${round(b / a, 2)}× from ${n(small!.items)} to ${n(large.items)} items: a line through both`,
        };
      return { value: Math.max(b, a ?? 0), rule: `${growth}: the largest measured` };
    case 'per chunk':
    case 'per part': {
      const { datasetBytes, chunkBytes } = large.basis;
      if (datasetBytes >= chunkBytes)
        return { value: b, rule: `${growth}: constant, the dataset filled a chunk` };
      const fill = Math.min((datasetBytes * target) / large.items, chunkBytes) / datasetBytes;
      return {
        value: b * fill,
        rule: `${growth}: scaled ×${round(fill, 2)} to a full chunk of ${n(chunkBytes)} bytes`,
      };
    }
    case 'per run':
      if (a !== null && comparable && large.items > small!.items)
        return {
          value: line(),
          rule: `per run: a line through ${n(small!.items)} and ${n(large.items)} items`,
        };
      return {
        value: (b * target) / large.items,
        rule: `per run: in proportion to the items from ${n(large.items)}`,
      };
  }
}
