/**
 * The report contract: the shape of report.json and of the figures in it, written for every
 * run, local or AWS, whatever the task family. Types only (and the schema versions): the
 * code that computes the figures is in the metrics library and in reports.
 */
import { headlineMetrics } from './metrics.js';
import type { FailureKind, ScoreKind } from './model.js';
import type { TokenUsage } from './provider.js';

/** A closed interval `[lo, hi]`. */
export type Interval = [lo: number, hi: number];

export interface LatencySummary {
  p50: number | null;
  p95: number | null;
  mean: number | null;
  max: number | null;
}

/** One correlation: ρ (null when n < 3 or a side is constant) over n items. */
export interface Correlation {
  spearman: number | null;
  n: number;
}

/** report.json `scores.<scorer>.bias.length`. */
export interface LengthBias extends Correlation {
  /** The same within each gold class (items without gold left out). */
  byGold: Record<string, Correlation>;
}

/** One metric: its value (null when there is no data), the n it ran over, and a 95% CI when resampled. */
export interface MetricValue {
  value: number | null;
  n: number;
  ci?: Interval;
  /** How people read it when its key alone does not say: `F1 of helpful` for `positiveF1`. */
  name?: string;
  /**
   * Why the value is null although there are items (its formula is 0/0 there: `undefined: one
   * label everywhere`), or why it has no interval (`too few items for an interval (n 5 < 20)`).
   */
  reason?: string;
}

/** A scorer's part of report.json `scores`. */
export interface ScorerSummary {
  kind: ScoreKind;
  /** Items with a value. */
  n: number;
  /** Items without one, by reason. */
  unscored: Partial<Record<FailureKind, number>>;
  metrics: Record<string, MetricValue>;
  /** Label scorers: `perClass`, `confusion` (against gold) and `distribution` (of the values). */
  tables?: Record<string, unknown>;
  /**
   * Whether the scores follow something other than quality: `length`, Spearman's ρ of the
   * output's length against the score (families that expose an output length; see `outputLength`);
   * `selfPreference`, the judge's verdicts against gold by the output's producer family, when the
   * suite names the producer column (`dataset.columns.producer`).
   */
  bias?: { length?: LengthBias; selfPreference?: SelfPreferenceBias };
  /** A run that scored each item k > 1 times (`run.repeats`): how stable the values are across repeats. */
  reliability?: ScorerReliability;
  /**
   * The dataset gives several annotators' labels per item: how far they agree with each other
   * (the human ceiling) and how far the judge agrees with them.
   */
  humanAgreement?: HumanAgreement;
  /**
   * Some items have gold and some not (`dataset.partialGold`, `dataset.goldFile`): the
   * prediction-powered estimate of what the gold would say over every item (see {@link PpiFigures}).
   */
  ppi?: PpiFigures;
}

/**
 * Which prediction-powered estimator gave a figure: `ppi++` when the labelled items are a random
 * sample of the items (Angelopoulos, Duchi & Zrnic 2023); `active` when some labels were chosen
 * with known probabilities (a gold file's `p`: active inference, Zrnic & Candès 2024).
 */
export type PpiEstimator = 'ppi++' | 'active';

/**
 * One prediction-powered estimate (power-tuned λ in [0, 1]) of a mean over every item: the
 * judge's values on all items corrected by the gold on the labelled ones. Beside it the
 * classical estimate from the labelled items alone and the judge-only mean over every item
 * (biased by the judge's errors: shown for contrast, never an estimate to report). A figure that
 * cannot be computed (fewer than 2 labelled items) is null.
 */
export interface PpiEstimate {
  /** The estimator, chosen by how the labels were chosen (absent in reports written before it). */
  estimator?: PpiEstimator;
  estimate: number | null;
  /** The 95% interval of `estimate`. */
  ci: Interval | null;
  classical: { estimate: number | null; ci: Interval | null };
  judgeOnly: { estimate: number | null };
  /** Items with gold (and a judge's value), and items with a judge's value and no gold. */
  nLabelled: number;
  nUnlabelled: number;
  /** The λ used (given, or power-tuned and clipped); null with the estimate. */
  lambda: number | null;
  /**
   * The gold labels a classical interval would need to be as narrow as the PPI one:
   * n · (classical width / PPI width)². Null with the estimate, or when either interval has
   * width 0 (the ratio then means nothing).
   */
  effectiveLabels: number | null;
}

/**
 * report.json `scores.<scorer>.ppi`. The top-level estimate is of `quantity`: for a number
 * scorer the mean of the gold, for a pass scorer the share passing, for a label scorer the share
 * of its positive class (its `positive` labels) or, without one, of its first label. A label
 * scorer also gives the share of each label (`byLabel`).
 */
export interface PpiFigures extends PpiEstimate {
  /** What the estimate is of, for people: `mean`, `share passing`, `share of helpful`. */
  quantity: string;
  byLabel?: Record<string, PpiEstimate>;
  /** Some labels were chosen with known probabilities (a gold file's `p`): see {@link PpiDesign}. */
  design?: PpiDesign;
}

/**
 * report.json `scores.<scorer>.ppi.design`: the labels are not a random sample of the items
 * (chosen by `assay label`, more often where the judge was unsure), so the agreement metrics of
 * `scores.<scorer>.metrics` (accuracy, F1, κ), computed over the labelled items as they are,
 * describe that sample, not the items. `accuracy` is the design-weighted one.
 */
export interface PpiDesign {
  sample: 'non-random';
  /** Labels with a probability `p` (weight 1/p). */
  chosen: number;
  /** Labels without one, there before the draw: probability 1 (weight 1). */
  certain: number;
  /**
   * The judge's accuracy over every item, each labelled item weighted by 1/p (the Hájek ratio
   * estimator), with a 95% Wilson interval at the design's effective number of items; over the
   * labelled items the judge gave a value. Label and pass scorers only.
   */
  accuracy?: { estimate: number | null; ci: Interval | null; n: number };
}

/** Values of one slice column kept with their own metrics; the items of the rest are counted under {@link OTHER_VALUE}. */
export const MAX_SLICE_VALUES = 100;
/** How a row without the slice column (or with it empty) is shown, and keyed in report.json and gates. */
export const NO_VALUE = '(none)';
/** The items of a slice column's values past {@link MAX_SLICE_VALUES}. */
export const OTHER_VALUE = '(other)';

/** report.json `slices.<column>.<value>`: the items with that value and the primary scorer's metrics over them. */
export interface SliceFigures {
  /** Items (results) with the value. */
  n: number;
  /** The same metric names and shapes as the primary scorer's `metrics`; none for `(other)`. */
  metrics: Record<string, MetricValue>;
  /** `(other)` only: what it holds. */
  note?: string;
}

/** The items a slice's metrics are over (its scored items: the most any metric has); undefined without metrics. */
export function sliceScored(slice: SliceFigures): number | undefined {
  const counts = Object.values(slice.metrics).map((m) => m.n);
  return counts.length > 0 ? Math.max(...counts) : undefined;
}

export interface StageCost {
  usd: number;
  calls: number;
  tokens: TokenUsage;
  /** False when a model called in this stage had no price: `usd` leaves its calls out. Absent: priced. */
  priced?: false;
}

export interface CostSummary {
  totalUsd: number;
  /** totalUsd / itemCount × 10,000; null when itemCount is 0. */
  per10kUsd: number | null;
  /** totalUsd / itemCount; null when itemCount is 0. */
  perItemUsd: number | null;
  tokens: TokenUsage;
  byStage: Record<string, StageCost>;
  /**
   * False when some calls were made to a model the price table has no price for: the dollar
   * figures leave those calls out, so they are a floor, not the cost. Absent in reports written
   * before it was recorded (they are read as priced).
   */
  priced?: boolean;
  /** The models that had no price (empty when `priced`). */
  unpriced?: string[];
  /**
   * Where the suite's own `run.prices` priced the run: the models it gave a price for (over
   * the price table), and its notes (on AWS: the models whose price in the suite the deployment
   * overruled). Absent when the suite gives no `run.prices`.
   */
  suitePrices?: SuitePrices;
}

/** report.json `cost.suitePrices`: the models priced by the suite's `run.prices`, and its notes. */
export interface SuitePrices {
  models: string[];
  note?: string;
}

export const REPORT_SCHEMA_VERSION = 2;

/**
 * The report contract: written for every run, local or AWS, whatever the task family. Plain
 * numbers only; a metric with no data is null. `scores` has every scorer's figures by kind;
 * `metrics` repeats the primary scorer's as plain values (for GEC: `accuracy`, `macroF1`,
 * `binary.f1` — the binary macro F1 — and `binary.positive`, `kappa`, `perClass`,
 * `confusion`), plus the family's own figures.
 */
export interface Report {
  schemaVersion: typeof REPORT_SCHEMA_VERSION;
  runId: string;
  suite: string;
  task: string;
  /** The family's facts about the suite (GEC: judge, method). */
  config: Record<string, string>;
  /** The backends the run called: none when the dataset gave the outputs and no scorer called a model. */
  backends: string[];
  /** Where the outputs come from when the dataset gives them (see `RunRecord.predictions`). */
  predictions?: string;
  /** True when any answer came from the simulator: the scores say nothing about a real model. */
  simulated: boolean;
  notice?: string;
  dataset: string;
  /**
   * `complete` when every item of the dataset has its result; `incomplete` when some have none
   * (a run that was stopped, or whose ingest never ended): the figures cover the items present.
   */
  status: 'complete' | 'incomplete';
  /** Items of the dataset without a result: 0 when complete; null when the total is unknown (ingest never ended). */
  missingItems: number | null;
  startedAt: string;
  /** When the run finished; null for an incomplete run. */
  finishedAt: string | null;
  counts: {
    /** Every dataset row of the run (after sampling): scored + failed. */
    items: number;
    /** Items with an output. */
    scored: number;
    /** Items without one, invalid rows included. */
    failed: number;
    invalidRows: number;
    /** Failed after reaching the pipeline (parse, refusal, provider, dead letter, budget…). */
    errors: number;
    byFailure: Partial<Record<FailureKind, number>>;
  };
  /** The scorer whose figures `metrics` repeats. */
  primaryScorer: string;
  scores: Record<string, ScorerSummary>;
  metrics: Record<string, unknown>;
  /**
   * The suite's `slices`: per column, per value (`(none)` for a row without one; `(other)` for
   * the values past the first 100 in sort order), the primary scorer's metrics over its items.
   */
  slices?: Record<string, Record<string, SliceFigures>>;
  /**
   * `totalUsd` is what this run paid. `cachedCalls` were answered from the LLM cache; `savedUsd`
   * is what they cost when first paid. `perItemUsd` and `per10kUsd` are at list price: what the
   * evaluation costs, its cached answers priced as if called, `(totalUsd + savedUsd) / items`.
   */
  cost: CostSummary & {
    calls: number;
    cachedCalls: number;
    savedUsd: number;
    /**
     * Calls answered by vendor batches (the batch lane) and what the batch discount took off
     * their synchronous price: `totalUsd + batch.savedUsd` is what the run would have cost synchronously.
     */
    batch?: { calls: number; savedUsd: number; discount: number };
  };
  latencyMs: LatencySummary;
  prompts: Record<string, string>;
  /** Against the suite's previous finished run (details in comparison.json / comparison.txt). */
  comparison?: Record<string, unknown>;
  /** Several judges labelled each item (the backends of an ensemble): how they agree and err together. */
  panel?: PanelSummary;
  /** Items whose data reads like a verdict or an instruction to the model (`ItemResult.injection`); absent when none. */
  injection?: InjectionSummary;
}

/** A run's possible injections: how many items, and the first {@link INJECTION_LISTED} of them in report order. */
export interface InjectionSummary {
  items: number;
  listed: { id: string; row: number; fields: string[] }[];
}

/** How many flagged items a report lists by id and row (it counts them all). */
export const INJECTION_LISTED = 100;

export const LEADERBOARD_SCHEMA_VERSION = 1;

export interface LeaderboardEntry {
  schemaVersion: typeof LEADERBOARD_SCHEMA_VERSION;
  runId: string;
  suite: string;
  task: string;
  dataset: string;
  /** The family's facts (GEC: judge, method). */
  config: Record<string, string>;
  backends: string[];
  /** Where the outputs come from when the dataset gives them: `predictions from preds.csv (column pred)`. */
  predictions?: string;
  /** The prompt files' content hashes, shortened: the same version has the same string. */
  promptVersion: string;
  simulated: boolean;
  primaryScorer: string;
  /** The primary scorer's headline metrics, with their CIs. */
  metrics: Record<string, MetricValue>;
  items: number;
  scored: number;
  per10kUsd: number | null;
  /** False when the run called a model without a price (its cost is unknown). Absent: priced. */
  priced?: false;
  p50LatencyMs: number | null;
  finishedAt: string;
}

/** The headline metrics of a kind, in the order summaries print them (from the metric table). */
export const HEADLINE_METRICS: Readonly<Record<ScoreKind, readonly string[]>> = Object.freeze({
  get label() {
    return headlineMetrics('label');
  },
  get number() {
    return headlineMetrics('number');
  },
  get pass() {
    return headlineMetrics('pass');
  },
});

/** A run's entry, from its report. */
export function leaderboardEntry(report: Report): LeaderboardEntry {
  const primary = report.scores[report.primaryScorer];
  const metrics: Record<string, MetricValue> = {};
  for (const name of primary ? HEADLINE_METRICS[primary.kind] : []) {
    const m = primary?.metrics[name];
    if (m) metrics[name] = m;
  }
  const promptVersion = Object.entries(report.prompts)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([path, hash]) => `${path.split('/').at(-1)}@${hash.slice(hash.indexOf(':') + 1).slice(0, 7)}`)
    .join(' ');
  return {
    schemaVersion: LEADERBOARD_SCHEMA_VERSION,
    runId: report.runId,
    suite: report.suite,
    task: report.task,
    dataset: report.dataset,
    config: report.config,
    backends: report.backends,
    ...(report.predictions ? { predictions: report.predictions } : {}),
    promptVersion,
    simulated: report.simulated,
    primaryScorer: report.primaryScorer,
    metrics,
    items: report.counts.items,
    scored: report.counts.scored,
    per10kUsd: report.cost.per10kUsd,
    ...(report.cost.priced === false ? { priced: false as const } : {}),
    p50LatencyMs: report.latencyMs.p50,
    finishedAt: report.finishedAt ?? report.startedAt,
  };
}

/**
 * The distance alpha weighs a disagreement by: nominal (any two different values), ordinal (the
 * squared difference of the two values' mid-ranks among all the values, on a scale from low to
 * high), interval (the squared difference of the numbers).
 */
export type AlphaLevel = 'nominal' | 'ordinal' | 'interval';

export interface Alpha {
  /** Null when it is undefined: fewer than two pairable values, or no variation among them. */
  value: number | null;
  /** Units (items) with at least two values: those alpha and its resamples run over. */
  n: number;
  /** 95 % percentile-bootstrap interval, resampling units; absent when there is no value. */
  ci?: Interval;
  /** Why there is a value but no interval: too few units for one (the coverage bench's minimum). */
  reason?: string;
}

/** A scorer's reliability across repeats: report.json `scores.<scorer>.reliability` (k > 1 only). */
export interface ScorerReliability {
  /** Times each item was scored. */
  repeats: number;
  /** Items with at least two repeat values (what the flip rate and alpha run over). */
  n: number;
  /** Share of those items whose repeats gave different values. */
  flipRate: number | null;
  /** Items whose most frequent values tied (labels, passes): the earliest repeat's value was taken. */
  ties: number;
  /**
   * Krippendorff's alpha across repeats: nominal for labels and passes, interval for numbers,
   * ordinal for a scorer whose values are a declared scale (ordinal labels, an integer range).
   */
  alpha: Alpha & { level: AlphaLevel };
  /** Number scorers: the pooled SD of an item's values across its repeats. */
  withinItemSd?: number | null;
  /**
   * Pass scorers: over items, the mean share of passing repeats (`passRate`), pass^k (`passAllK`:
   * the chance that k repeats all pass, C(c, k) / C(n, k) an item) and pass@k (`passAnyK`: that
   * one of k passes), each with a bootstrap interval over items; `short` counts the items with
   * fewer than k repeat values (an error left a repeat without one), which pass^k and pass@k leave out.
   */
  passes?: { k: number; passRate: MetricValue; passAllK: MetricValue; passAnyK: MetricValue; short: number };
  /**
   * Per headline metric: its SD across the single-repeat runs (the metric on repeat 1's values,
   * on repeat 2's, …). A difference between two runs within it is within the scorer's own noise.
   */
  noiseFloor: Record<string, number | null>;
  /** Per headline metric: its value on each single-repeat run, in repeat order. */
  perRepeat: Record<string, (number | null)[]>;
}

/**
 * A scorer's human ceiling: report.json `scores.<scorer>.humanAgreement`, when the dataset gives
 * several annotators' labels per item. Each figure is null when there is nothing to compute it
 * on, and carries the items it ran over and a 95 % bootstrap interval over the annotated items
 * (the three on the same resamples).
 */
export interface HumanAgreement {
  /** The most annotators an item had. */
  annotators: number;
  /** Items at least one annotator labelled. */
  items: number;
  /** Krippendorff's alpha among the annotators (a blank is a missing value), at `level`. */
  alpha: MetricValue;
  /** Over items with two labels or more: the mean share of the item's annotator pairs that agree. */
  pairwiseAgreement: MetricValue;
  /**
   * The judge as one more annotator: per annotator, the share of items (with both a judge value
   * and that annotator's label) where the two agree; the mean over annotators.
   */
  judgeAgreement: MetricValue;
  /**
   * Krippendorff's alpha of the judge's verdict against each annotator's label: alpha over the
   * judge–annotator pairs (as `alpha` is over the annotator–annotator pairs), on the items with
   * a verdict and a label. The figure set against `alpha` (absent in reports written before it).
   */
  judgeAlpha?: MetricValue;
  /** Number scorers: per annotator, Pearson's r between the judge's value and the rating; the mean. */
  judgeCorrelation?: MetricValue;
  /** The distance alpha weighs a disagreement by: as across repeats (see {@link ScorerReliability}). */
  level: AlphaLevel;
  /**
   * How the judge's value meets a label in `judgeAgreement` and `judgeAlpha`: `value` as it is;
   * `threshold` (a number scorer against 0/1 labels) 1 at or above `threshold`, else 0; `none`
   * (such a scorer without a threshold) not at all: both are null, `judgeCorrelation` remains.
   */
  judgeVerdict?: 'value' | 'threshold' | 'none';
  /** With `judgeVerdict: "threshold"`: the scorer's threshold. */
  threshold?: number;
}

/** A producer family's items: report.json `scores.<scorer>.bias.selfPreference.byProducer.<family>`. */
export interface ProducerFamilySummary {
  n: number;
  /** Of them, items judged by a judge of the same family. */
  ownFamily: number;
  /** The judge's mean verdict (a pass or a positive label 1, a fail 0, a number itself). */
  judge: MetricValue;
  /** Gold's mean on the same scale. */
  gold: MetricValue;
  /** The judge's mean error, judge − gold. */
  error: MetricValue;
}

/** The judge's mean error on its own family's outputs minus that on other families'. */
export interface SelfPreferenceDifference {
  value: number;
  ci?: Interval;
  own: { n: number; error: number };
  other: { n: number; error: number };
}

export interface SelfPreferenceGroupSummary {
  /** Items with both a verdict and gold. */
  items: number;
  byProducer: Record<string, ProducerFamilySummary>;
  /** Positive: the judge rates its own family's outputs higher, relative to gold, than others'. Null when a side has no item. */
  selfPreference: SelfPreferenceDifference | null;
}

/**
 * report.json `scores.<scorer>.bias.selfPreference`: the judge's verdicts against gold by the
 * family of the model that produced each output (read from `column`), and how much more
 * favourably it judges its own family's outputs.
 */
export interface SelfPreferenceBias extends SelfPreferenceGroupSummary {
  /** The dataset column naming each output's producer. */
  column: string;
  /** Items whose row names no producer. */
  noProducer: number;
  /** Items whose judge's model is not known (given outputs, or several backends that could have judged). */
  noJudge: number;
  /** Items with a producer and a judge but no verdict or no gold. */
  skipped: number;
  /** The same figures for each judge family on its own items. */
  byJudge: Record<string, SelfPreferenceGroupSummary>;
}

/** One pair of a panel's judges over the items both labelled. */
export interface PanelPairSummary {
  judges: [string, string];
  /** Share of those items both labelled identically. */
  agreement: MetricValue;
  /** Pearson correlation (phi) of the two judges' error indicators against gold; null when either does not vary. */
  errorCorrelation: MetricValue;
}

/**
 * report.json `panel`: several judges labelled each item (the backends of an ensemble). Each
 * judge's accuracy against gold, each pair's agreement and error correlation, the effective
 * number of independent judges k / (1 + (k − 1)·ρ̄), and the panel's plurality vote against its
 * best single judge. Intervals are 95% bootstrap intervals over items.
 */
export interface PanelSummary {
  /** Where the judges come from (`ensemble backends`). */
  source: string;
  judges: string[];
  items: number;
  accuracy: Record<string, MetricValue>;
  pairs: PanelPairSummary[];
  /** The panel's plurality label's accuracy (ties broken by the most accurate voting judge, or counted wrong). */
  majority: MetricValue;
  /** Items whose vote was tied. */
  ties: number;
  tiesPolicy: 'best-judge' | 'wrong';
  /** Majority minus the best single judge on that judge's items; null when no judge labelled anything. */
  majorityVsBest: PanelMajorityVsBest | null;
  /** n_eff, clipped to [1, k]; null below two judges or without a defined pair. */
  effectiveJudges: PanelEffectiveJudges;
}

/** The panel's majority against its best single judge, over the items that judge labelled. */
export interface PanelMajorityVsBest {
  bestJudge: string;
  n: number;
  best: number;
  majority: number;
  /** majority − best. */
  delta: number;
  /** Paired-bootstrap interval of the delta. */
  ci?: Interval;
  /** Two-sided paired-bootstrap p-value of the delta. */
  pValue?: number;
}

/** The effective number of independent judges, with what it is computed from. */
export interface PanelEffectiveJudges extends MetricValue {
  /** Judges that labelled at least one item. */
  k: number;
  /** Mean pairwise error correlation ρ̄ among them; null when no pair has one. */
  meanErrorCorrelation: number | null;
  /** Pairs whose error correlation is defined (those ρ̄ averages). */
  pairs: number;
}
