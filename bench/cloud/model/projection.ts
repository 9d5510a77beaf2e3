/**
 * From the runs the model measured (one size, or two) to a run of `target` items: its wall
 * time, its AWS cost, and whether every function and every partition key would stay within
 * its limits. Each figure is projected by the rule its kind of work follows (kinds.ts), and the
 * rule is written next to it:
 *
 * - per-item costs scale with the items;
 * - the rate follows the fleet's ramp second by second: the items mapping's lanes grow from
 *   where Lambda starts them at its documented rate up to their most (fleet.ts), each lane
 *   scoring a full batch per mean full-batch duration of the run, never more than ingest has
 *   queued (ingest at its rate as measured over its reading, claims included, with the ranges
 *   the target has at once),
 *   nor than the table serves: its warm throughput, doubling each half hour up to its quota,
 *   planned to 80 % so a second busier than the mean fits, and taken first by ingest's claims
 *   (a unit a row while it reads) and then by the units per item the rest of the run took;
 * - wall = the time to the first result + the ramped time for the target + the vendor's burst
 *   of 429s (once: the rate leaves it out) + the tail after the last result (the aggregation),
 *   projected stage by stage: the measured tail, plus for each per-run step (the run's claim,
 *   the reduction, the assembly) its projected duration less its measured one, plus for each
 *   per-part step (tally, files) the waves it needs more at the target (its parts over the
 *   aggregate mapping's lanes; a part is a chunk's rows, at most `PART_ROWS`) times its
 *   projected duration; a run aggregated in one pass is one per-run step;
 * - per batch, per pass: constant (the largest measured); with two sizes, a figure that grew by
 *   more than a quarter between them is fitted through both: per batch in the log of the items
 *   (the largest of more batches, by the tail of the calls they wait for), per pass as a line;
 * - per chunk, per part: constant once the dataset fills a chunk; a dataset smaller than a chunk
 *   is scaled up to a full chunk in proportion to its bytes;
 * - per run: a line through two sizes aggregated the same way (in one pass or in parts), never
 *   below the larger; from one size, in proportion to the items (at most linear growth assumed);
 *   where the largest run's step was also replayed on more parts than it had (the assembly), a
 *   line through the two replays with the most parts, never below the larger nor below the runs'
 *   own figure (calibration.ts' `SCALED_PARTS`);
 * - memory is the container's baseline plus the projected heap growth; /tmp as projected;
 * - every key family's and the table's peak offered load follows the rate items complete: the
 *   run's peak times the projected steady rate over the run's steady rate (never less), and the
 *   id claims' (`IDS#`) ingest's rate at the target over the run's; each
 *   is checked against 80 % of its limit (a key: 1,000 WRU/s, 3,000 RRU/s; the table: its
 *   quota), and any request refused in the runs fails the projection.
 *
 * Anything that cannot be checked (a figure not measured, an aggregation mode the runs did not
 * exercise) counts as not within limits, with the reason.
 */
import { awsEnvSchema } from '../../../shared/adapters/aws/env.js';
import { PART_ROWS } from '../../../shared/lib/layout/queues.js';
import { KEY_PREFIXES } from '../../../shared/lib/layout/table.js';
import {
  FUNCTIONS,
  HEADROOM,
  type KindFigures,
  PARTITION_LIMITS,
  type RunFigures,
  round,
} from './figures.js';
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
  /** Items over the ramped scoring time (the fleet's ramp included). */
  itemsPerSecond: number;
  /** The rate once the fleet has ramped up: the lowest of the stages' steady rates. */
  steadyItemsPerSecond: number;
  /** What sets that rate. */
  rateSetBy: string;
  /** Seconds the items mapping takes to reach its most lanes (0: it starts there). */
  rampSeconds: number;
  /** The worker's concurrency at its most. */
  peakConcurrency: number;
  wallSeconds: number | null;
  /** Of the wall: the aggregation after the last result, and how it was projected. */
  tailSeconds: number | null;
  tailRule: string;
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

  const ramp = projectRamp(large, target);
  reasons.push(...ramp.reasons);
  const tail = projectTail(large, small, target);
  const head = large.basis.headS;
  const wallSeconds =
    ramp.seconds !== null && head !== null && tail.value !== null
      ? round(head + ramp.seconds + large.basis.burstS + tail.value, 1)
      : null;
  if (wallSeconds === null)
    reasons.push('the wall time cannot be projected: the run has no full-batch duration or no report');

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
      let duration = projectGrowth(k.growth, target, large, small, pick('maxDurationS'), same);
      let heap = projectGrowth(k.growth, target, large, small, pick('peakHeapMb'), same);
      let tmp = projectGrowth(k.growth, target, large, small, pick('peakTmpMb'), same);
      const wider = k.scaled ?? [];
      if (k.growth === 'per run' && wider.length >= 2) {
        // Replays on more parts than the runs had: a line through them (see projectScaled).
        const measured = (field: 'peakHeapMb' | 'peakTmpMb') => maxOf(runs.map(pick(field)));
        duration = projectScaled(wider, target, 'durationS', duration);
        heap = projectScaled(wider, target, 'peakHeapMb', {
          value: measured('peakHeapMb'),
          rule: 'measured',
        });
        tmp = projectScaled(wider, target, 'peakTmpMb', { value: measured('peakTmpMb'), rule: 'measured' });
      }
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

  // Every key family and the table, at the load the projected rate offers them.
  const scaleUp = large.itemsPerSecond > 0 ? Math.max(1, ramp.steady / large.itemsPerSecond) : 1;
  const loadRule = `the run's peak offered load × ${round(scaleUp, 2)} (the projected steady rate over the run's)`;
  // Ingest's claims follow ingest's rate, not the rate items complete.
  const ingestAt = ingestRateAt(large, target);
  const measuredIngest = large.stages.ingestItemsPerSecond;
  const ingestScale = ingestAt && measuredIngest ? Math.max(1, ingestAt.rate / measuredIngest) : scaleUp;
  const ingestRule = `the run's peak offered load × ${round(ingestScale, 2)} (ingest's rate at the target over the run's)`;
  for (const [family, f] of Object.entries(large.keyFamilies)) {
    const claims = family === KEY_PREFIXES.ids.slice(0, -1);
    const scale = claims ? ingestScale : scaleUp;
    const rule = claims ? ingestRule : loadRule;
    checks.push(
      check(
        `key family ${family}: WRU/s offered`,
        f.peakOfferedWruPerSecond * scale,
        HEADROOM * PARTITION_LIMITS.wru,
        rule,
        1,
      ),
      check(
        `key family ${family}: RRU/s offered`,
        f.peakOfferedRruPerSecond * scale,
        HEADROOM * PARTITION_LIMITS.rru,
        rule,
        1,
      ),
    );
  }
  checks.push(
    check(
      'the table: WRU/s offered',
      large.tablePeak.wru * scaleUp,
      HEADROOM * large.tablePeak.quota.wru,
      `${loadRule}, against the table's quota`,
      0,
    ),
    check(
      'the table: RRU/s offered',
      large.tablePeak.rru * scaleUp,
      HEADROOM * large.tablePeak.quota.rru,
      `${loadRule}, against the table's quota`,
      0,
    ),
  );
  const refused = runs.reduce(
    (n, r) => n + Object.values(r.keyFamilies).reduce((m, f) => m + f.refused, 0),
    0,
  );
  if (refused > 0)
    reasons.push(`${refused} requests were refused by a key's or the table's limit in the runs measured`);
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
    itemsPerSecond: ramp.seconds ? round(target / ramp.seconds, 1) : 0,
    steadyItemsPerSecond: round(ramp.steady, 1),
    rateSetBy: ramp.setBy,
    rampSeconds: ramp.rampSeconds,
    peakConcurrency: ramp.peakConcurrency,
    wallSeconds,
    tailSeconds: tail.value === null ? null : round(tail.value, 1),
    tailRule: tail.rule,
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

/**
 * Ingest's rate at `target` items: it reads a file in ranges of `chunkBytes`, as many at once
 * as its reserved concurrency allows. The run measured its rate with the ranges it had at once,
 * over the whole of its reading (a range hands its rows on only once they are claimed, at the
 * deployment's claims pace: the rate at which it then sends them would flatter it); a larger
 * file has more ranges (up to that concurrency), each as fast.
 */
export function ingestRateAt(run: RunFigures, target: number): { rate: number; why: string } | null {
  const measured = run.stages.ingestItemsPerSecond;
  if (measured === null) return null;
  const most = run.fleet.reserved.ingest ?? run.fleet.accountConcurrency;
  // A range is a part: a chunk's bytes, at most PART_ROWS rows.
  const atOnce = (items: number) => Math.min(most, partsAt(run, items));
  const inRun = atOnce(run.items);
  const atTarget = atOnce(target);
  if (atTarget === inRun)
    return { rate: measured, why: `ingest, at its measured rate (${inRun} ranges at once)` };
  return {
    rate: (measured / inRun) * atTarget,
    why: `ingest: ${atTarget} ranges at once at its measured ${Math.round(measured / inRun).toLocaleString('en-US')} items/s a range (the run read ${inRun} at once)`,
  };
}

/**
 * The time to score `target` items as the fleet ramps, second by second: the worker's lanes
 * (from the items mapping's start, adding its rate a minute, up to its most within the
 * account's concurrency), each scoring a full batch per mean full-batch duration; capped by
 * ingest's steady rate and by what the table serves at the run's busiest units per item.
 */
export function projectRamp(
  run: RunFigures,
  target: number,
): {
  seconds: number | null;
  steady: number;
  setBy: string;
  rampSeconds: number;
  peakConcurrency: number;
  reasons: string[];
} {
  const { scaling, accountConcurrency, reserved } = run.fleet;
  const othersReserved = Object.entries(reserved)
    .filter(([fn]) => fn !== 'worker')
    .reduce((n, [, r]) => n + (r ?? 0), 0);
  const most = Math.min(scaling.concurrency, reserved.worker ?? accountConcurrency - othersReserved);
  const perLane =
    run.stages.workerFleetItemsPerSecond !== null && scaling.concurrency > 0
      ? run.stages.workerFleetItemsPerSecond / Math.min(scaling.concurrency, accountConcurrency)
      : null;
  const reasons: string[] = [];
  if (perLane === null)
    return { seconds: null, steady: 0, setBy: 'not measured', rampSeconds: 0, peakConcurrency: 0, reasons };
  const ingest = ingestRateAt(run, target);
  const units = tableUnits(run);
  // What the table serves in second `t`: its warm throughput, doubling each half hour up to its
  // quota, planned to 80 % of it so that a second busier than the mean fits.
  const table = (t: number) => {
    const doublings = 2 ** Math.floor(t / 1800);
    return {
      wru: HEADROOM * Math.min(run.tablePeak.quota.wru, run.tablePeak.warm.wru * doublings),
      rru: HEADROOM * Math.min(run.tablePeak.quota.rru, run.tablePeak.warm.rru * doublings),
    };
  };
  const per = (capacity: number, unitsPerItem: number) =>
    unitsPerItem > 0 ? capacity / unitsPerItem : Number.POSITIVE_INFINITY;
  let queued = 0;
  let done = 0;
  let t = 0;
  let lanes = Math.min(most, scaling.initial);
  let rampSeconds = 0;
  let tableBound = 0;
  const seconds: { rate: number; why: string; ramping: boolean }[] = [];
  const n = (x: number) => Math.round(x).toLocaleString('en-US');
  while (done < target && t < 24 * 3600) {
    const served = table(t);
    // Ingest first (its claims): it queues at its rate while rows are left, as the table lets it.
    const ingesting =
      queued < target
        ? Math.min(
            target - queued,
            ingest?.rate ?? Number.POSITIVE_INFINITY,
            per(served.wru, units.ingest.wru),
            per(served.rru, units.ingest.rru),
          )
        : 0;
    queued += ingesting;
    const fleet = lanes * perLane;
    const caps = [
      { rate: fleet, why: `the worker fleet: ${n(lanes)} lanes × ${round(perLane, 2)} items/s` },
      {
        rate: Math.min(
          per(served.wru - ingesting * units.ingest.wru, units.worker.wru),
          per(served.rru - ingesting * units.ingest.rru, units.worker.rru),
        ),
        why: `the table's throughput (${n(run.tablePeak.warm.wru)} WRU/s warm, quota ${n(run.tablePeak.quota.wru)}, planned to ${HEADROOM * 100} %) at ${round(units.worker.wru, 2)} WRU and ${round(units.worker.rru, 2)} RRU per item scored${ingesting > 0 ? `, beside ingest's ${round(units.ingest.wru, 2)} WRU a row` : ''}`,
      },
      ...(ingest !== null && queued - done <= fleet ? [{ rate: queued - done, why: ingest.why }] : []),
    ];
    const cap = caps.reduce((a, b) => (b.rate < a.rate ? b : a));
    if (cap === caps[1] && cap.rate < fleet) tableBound += 1;
    seconds.push({ rate: cap.rate, why: cap.why, ramping: lanes < most });
    done += Math.max(0, Math.min(cap.rate, queued - done));
    t += 1;
    if (lanes < most) {
      lanes = Math.min(most, lanes + scaling.perMinute / 60);
      rampSeconds = t;
    }
  }
  if (tableBound > 0)
    reasons.push(
      `the fleet would offer the table more than 80 % of what it serves for ${n(tableBound)} s (its warm throughput ${n(run.tablePeak.warm.wru)} WRU/s${run.tablePeak.warm.declared ? '' : ', a new table’s'}, quota ${n(run.tablePeak.quota.wru)}): requests would be refused`,
    );
  // Steady: the median second once the fleet has ramped (the last, partial second left out),
  // and what held most of those seconds back.
  const settled = seconds.slice(0, -1).filter((s) => !s.ramping);
  const phase = settled.length > 0 ? settled : seconds;
  const steady = phase.map((s) => s.rate).sort((a, b) => a - b)[Math.floor(phase.length / 2)] ?? 0;
  const held = new Map<string, number>();
  for (const s of phase) held.set(s.why, (held.get(s.why) ?? 0) + 1);
  const setBy = [...held].sort((a, b) => b[1] - a[1])[0]?.[0] ?? '';
  if (done < target) reasons.push('the projected run does not end within a day');
  // Never more than queued, so the last second ends the target: whole seconds.
  return {
    seconds: done >= target ? t : null,
    steady,
    setBy,
    rampSeconds,
    peakConcurrency: Math.round(lanes),
    reasons,
  };
}

/**
 * The table's request units of the run, split by who asks: ingest's claims of the items' ids
 * (the `IDS` keys, one per row), which come while ingest reads, and the rest per item scored
 * (results, counters, the cache, leases, spend), which come as items complete.
 */
export function tableUnits(run: RunFigures): {
  ingest: { wru: number; rru: number };
  worker: { wru: number; rru: number };
} {
  const ids = run.keyFamilies[KEY_PREFIXES.ids.slice(0, -1)];
  const ingest = { wru: (ids?.writeUnits ?? 0) / run.items, rru: (ids?.readUnits ?? 0) / run.items };
  return {
    ingest,
    worker: {
      wru: Math.max(0, run.perItem.dynamoWriteUnits - ingest.wru),
      rru: Math.max(0, run.perItem.dynamoReadUnits - ingest.rru),
    },
  };
}

/** The parts a run of `items` is aggregated in: a chunk's bytes each, at most `PART_ROWS` rows. */
export function partsAt(run: RunFigures, items: number): number {
  const { datasetBytes, chunkBytes } = run.basis;
  return Math.max(
    1,
    Math.ceil(((datasetBytes / run.items) * items) / chunkBytes),
    Math.ceil(items / PART_ROWS),
  );
}

/**
 * The aggregation after the last result at `target` items, stage by stage (see the module's
 * rules): each per-run step's growth, and the per-part steps' waves over the aggregate lanes.
 */
export function projectTail(
  large: RunFigures,
  small: RunFigures | undefined,
  target: number,
): { value: number | null; rule: string } {
  const measured = large.basis.tailS;
  if (measured === null) return { value: null, rule: 'the run wrote no report' };
  const same = sameAggregation(large, small);
  const lanes = Math.max(1, large.basis.aggregateLanes);
  const waves = (items: number) => Math.ceil(partsAt(large, items) / lanes);
  const more = waves(target) - waves(large.items);
  let value = measured;
  const terms: string[] = [];
  for (const [kind, k] of Object.entries(large.lambda.aggregate.byKind)) {
    if (k.maxDurationS === null || kind === 'aggregate:sweep') continue;
    const pick = (r: RunFigures) => r.lambda.aggregate.byKind[kind]?.maxDurationS ?? null;
    const projected = projectGrowth(k.growth, target, large, small, pick, same).value ?? k.maxDurationS;
    const added =
      k.growth === 'per part' ? more * projected + (projected - k.maxDurationS) : projected - k.maxDurationS;
    value += Math.max(0, added);
    if (added > 0)
      terms.push(
        k.growth === 'per part'
          ? `${kind} +${more} waves of ${round(projected, 2)} s`
          : `${kind} ${round(k.maxDurationS, 2)} → ${round(projected, 2)} s`,
      );
  }
  const n = (x: number) => x.toLocaleString('en-US');
  return {
    value,
    rule: `the measured ${round(measured, 1)} s${terms.length > 0 ? ` + ${terms.join(', ')}` : ''} (${n(partsAt(large, target))} parts over ${lanes} lanes: ${waves(target)} waves, ${waves(large.items)} in the run)`,
  };
}

/** Two runs aggregated the same way: both in one pass or both in parts. */
function sameAggregation(large: RunFigures, small: RunFigures | undefined): boolean {
  return small !== undefined && small.basis.aggregateInParts === large.basis.aggregateInParts;
}

/**
 * A per-run figure of `target` items from the replays on more parts than the runs had (the two
 * with the most parts): a line through both in the results they stand for, never below the
 * larger, nor below `runs` (the figure as the runs alone project or measure it). The parts of a
 * run hold the same number of results whatever its size (a chunk's), so more parts is what a
 * larger run is to the assembly.
 */
export function projectScaled(
  scaled: readonly NonNullable<KindFigures['scaled']>[number][],
  target: number,
  field: 'durationS' | 'peakHeapMb' | 'peakTmpMb',
  runs: { value: number | null; rule: string },
): { value: number | null; rule: string } {
  const [a, b] = scaled.slice(-2) as [(typeof scaled)[number], (typeof scaled)[number]];
  const slope = (b[field] - a[field]) / (b.items - a.items);
  const line = Math.max(b[field], a[field], b[field] + slope * (target - b.items));
  const n = (x: number) => x.toLocaleString('en-US');
  const rule = `per run: replayed on ${a.parts} and ${b.parts} parts (${n(a.items)} and ${n(b.items)} results, the run's largest part repeated): a line through both`;
  if (runs.value !== null && runs.value > line)
    return { value: runs.value, rule: `${rule}, below the runs' (${runs.rule}): theirs` };
  return { value: line, rule };
}

const maxOf = (values: readonly (number | null)[]) => {
  const known = values.filter((v): v is number => v !== null);
  return known.length > 0 ? Math.max(...known) : null;
};

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
      // A batch's own work does not grow with the run; the largest of more batches does, by the
      // tail of what they wait for (the model calls' latency), as the log of how many there are.
      if (a !== null && a > 0 && b > 1.25 * a) {
        const perLog = (b - a) / Math.log(large.items / small!.items);
        return {
          value: Math.max(b, b + perLog * Math.log(target / large.items)),
          rule: `per batch: the largest of more batches; it grew ${round(b / a, 2)}× from ${n(small!.items)} to ${n(large.items)} items: a line through both in the log of the items`,
        };
      }
      return { value: Math.max(b, a ?? 0), rule: `${growth}: the largest measured` };
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
