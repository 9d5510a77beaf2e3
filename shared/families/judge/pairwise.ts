/**
 * Pairwise judges: two answers compared, each item asked in both orders. Judges that compare
 * two answers tend to prefer the one shown first (or the longer one); asking twice, with the
 * answers swapped, shows how often the verdict survives the swap and how often the first-shown
 * answer wins. A dataset that already holds a judge's verdicts in both orders (two output
 * columns) is read the same way, with the same figures.
 *
 * Vocabulary: an order's answer "as shown" is A (the answer shown first won), B (the answer
 * shown second won) or tie. In the dataset order (`ab`) that is also the verdict; in the
 * swapped order (`ba`) A as shown means the dataset's B won, and B means A.
 */

import type { FamilyReportTally, ReportSection } from '../../family/types.js';
import { withInterval } from '../../lib/format.js';
import {
  addCounts,
  bootstrapCis,
  type Indices,
  type NumberArray,
  NumberColumn,
} from '../../lib/metrics/index.js';
import { type ItemResult, storedFieldLength } from '../../model/model.js';
import type { MetricValue, Report } from '../../model/report.js';
import type { InconsistentRule, JudgeBlock, JudgeSuite } from './suite.js';

export const PAIRWISE_LABELS = ['A', 'B', 'tie'] as const;
export type Preference = (typeof PAIRWISE_LABELS)[number];

/** The two orders an item is asked in: the dataset's (A shown first) and the swapped one. */
export type Order = 'ab' | 'ba';

/** What a pairwise judge answered in each order, as shown (see the module comment). */
export interface PairwiseAnswers {
  ab: Preference;
  ba: Preference;
}

/** The dataset gives a pairwise judge's verdicts in both orders (`columns.output` two columns). */
export function givenInBothOrders(suite: JudgeSuite): boolean {
  return suite.judge.pairwise !== undefined && Array.isArray(suite.dataset.columns.output);
}

/** A judge block with the pairwise answer labels, built once per block (answer schemas cache on it). */
const answerBlocks = new WeakMap<JudgeBlock, JudgeBlock>();

export function pairwiseAnswerBlock(judge: JudgeBlock): JudgeBlock {
  let block = answerBlocks.get(judge);
  if (!block) {
    block = { ...judge, labels: [...PAIRWISE_LABELS] };
    answerBlocks.set(judge, block);
  }
  return block;
}

/** The other answer: what an answer given in the swapped order means in the dataset order. */
export function swapBack(shown: Preference): Preference {
  return shown === 'A' ? 'B' : shown === 'B' ? 'A' : 'tie';
}

/** The item's input in the swapped order: the two answer columns trade places. */
export function swappedInput(input: Record<string, string>, [a, b]: readonly [string, string]) {
  return { ...input, [a]: input[b]!, [b]: input[a]! };
}

/**
 * The item's verdict from its two answers: the same after the swap → that verdict; else
 * inconsistent, resolved by `rule` (`tie`, `first`: the dataset order's verdict, `fail`: none).
 */
export function pairwiseVerdict(
  answers: PairwiseAnswers,
  rule: InconsistentRule = 'tie',
): { consistent: boolean; verdict: Preference | undefined } {
  const ab = answers.ab;
  const ba = swapBack(answers.ba);
  if (ab === ba) return { consistent: true, verdict: ab };
  return { consistent: false, verdict: rule === 'tie' ? 'tie' : rule === 'first' ? ab : undefined };
}

/**
 * A gold preference: A, B or tie in any case, the spellings of public preference datasets
 * (`model_a`, `model_b`, `tie (bothbad)`), `response_a`/`answer_a`, `draw`, and the answer
 * columns' own names (the first is A). Undefined for anything else.
 */
export function goldPreference(value: string, columns?: readonly [string, string]): Preference | undefined {
  const text = value.trim().toLowerCase();
  if (columns && text === columns[0].toLowerCase()) return 'A';
  if (columns && text === columns[1].toLowerCase()) return 'B';
  return GOLD_SPELLINGS[text];
}

const GOLD_SPELLINGS: Record<string, Preference> = {
  a: 'A',
  model_a: 'A',
  response_a: 'A',
  answer_a: 'A',
  b: 'B',
  model_b: 'B',
  response_b: 'B',
  answer_b: 'B',
  tie: 'tie',
  'tie (bothbad)': 'tie',
  draw: 'tie',
};

/** report.json `metrics.pairwise`: how the verdicts hold up under the swap. */
export interface PairwiseFigures {
  /** What an inconsistent item's verdict became. */
  inconsistent: InconsistentRule;
  /** Where both orders' answers came from: the judge asked in each, or the dataset's two verdict columns. */
  orders: 'asked' | 'given';
  /** Items answered in both orders (the n of positionConsistency). */
  items: number;
  consistentItems: number;
  inconsistentItems: number;
  /** Share of items with the same verdict after the swap, with a bootstrap CI over items. */
  positionConsistency: MetricValue;
  /**
   * Share of the non-tie answers of both orders won by the answer shown first (n: those
   * answers); 0.5 means no position bias. The CI resamples items (both orders together).
   */
  firstPositionWinRate: MetricValue;
  /**
   * Share of the non-tie answers of both orders won by the longer answer (n: those answers,
   * pairs of equal length left out); 0.5 means no length bias. The CI resamples items.
   */
  longerAnswerWinRate: MetricValue;
  /** Every answer of both orders, as shown: first-shown won, second-shown won, tie. */
  answers: { firstShown: number; secondShown: number; tie: number };
}

/** One item's part of the figures. */
interface ItemCounts {
  consistent: number;
  firstWins: number;
  decided: number;
  longerWins: number;
  lengthDecided: number;
}

/** The pairwise answers a result keeps (`details.pairwise`), when it has both. */
export function answersOf(details: Record<string, unknown> | undefined): PairwiseAnswers | undefined {
  const answers = details?.pairwise as Partial<PairwiseAnswers> | undefined;
  const known = (v: unknown): v is Preference => PAIRWISE_LABELS.includes(v as Preference);
  return answers && known(answers.ab) && known(answers.ba) ? { ab: answers.ab, ba: answers.ba } : undefined;
}

/** One item's counts, from its two answers and the lengths of its answers A and B. */
export function itemCounts(answers: PairwiseAnswers, lengthA?: number, lengthB?: number): ItemCounts {
  const counts: ItemCounts = { consistent: 0, firstWins: 0, decided: 0, longerWins: 0, lengthDecided: 0 };
  if (answers.ab === swapBack(answers.ba)) counts.consistent = 1;
  const longer =
    lengthA === undefined || lengthB === undefined || lengthA === lengthB
      ? undefined
      : lengthA > lengthB
        ? 'A'
        : 'B';
  for (const [order, shown] of Object.entries(answers) as [Order, Preference][]) {
    if (shown === 'tie') continue;
    counts.decided += 1;
    if (shown === 'A') counts.firstWins += 1;
    if (longer) {
      counts.lengthDecided += 1;
      if ((order === 'ab' ? shown : swapBack(shown)) === longer) counts.longerWins += 1;
    }
  }
  return counts;
}

/** Each item's counts as columns (one per count, an item's at its index). */
export type ItemCountColumns = Record<keyof ItemCounts, ArrayLike<number>>;

const COUNTS = ['consistent', 'firstWins', 'decided', 'longerWins', 'lengthDecided'] as const;

/** The figures of a pairwise run, from each item's counts (in report order, for reproducible CIs). */
export function pairwiseFigures(
  rule: InconsistentRule,
  items: readonly ItemCounts[] | ItemCountColumns,
  answers: PairwiseFigures['answers'],
  orders: PairwiseFigures['orders'] = 'asked',
): PairwiseFigures {
  const columns = {} as ItemCountColumns;
  for (const count of COUNTS)
    columns[count] = Array.isArray(items)
      ? (items as readonly ItemCounts[]).map((c) => c[count])
      : (items as ItemCountColumns)[count];
  const n = columns.consistent.length;
  // One pass over a resample sums every count; the three shares follow from the sums.
  const shares = (ix: Indices) => {
    const sum: ItemCounts = { consistent: 0, firstWins: 0, decided: 0, longerWins: 0, lengthDecided: 0 };
    for (const i of ix) {
      sum.consistent += columns.consistent[i]!;
      sum.firstWins += columns.firstWins[i]!;
      sum.decided += columns.decided[i]!;
      sum.longerWins += columns.longerWins[i]!;
      sum.lengthDecided += columns.lengthDecided[i]!;
    }
    const ratio = (part: number, whole: number) => (whole === 0 ? null : part / whole);
    return {
      sum,
      values: {
        positionConsistency: ratio(sum.consistent, ix.length),
        firstPositionWinRate: ratio(sum.firstWins, sum.decided),
        longerAnswerWinRate: ratio(sum.longerWins, sum.lengthDecided),
      },
    };
  };
  const all = new Uint32Array(n);
  for (let i = 0; i < n; i += 1) all[i] = i;
  const { sum, values } = shares(all);
  const cis = n > 0 ? bootstrapCis(n, (ix) => shares(ix).values) : {};
  const metric = (name: keyof typeof values, of: number): MetricValue => {
    const value = values[name];
    const ci = cis[name];
    return { value, n: of, ...(value !== null && ci ? { ci } : {}) };
  };
  const consistentItems = sum.consistent;
  return {
    inconsistent: rule,
    orders,
    items: n,
    consistentItems,
    inconsistentItems: n - consistentItems,
    positionConsistency: metric('positionConsistency', n),
    firstPositionWinRate: metric('firstPositionWinRate', sum.decided),
    longerAnswerWinRate: metric('longerAnswerWinRate', sum.lengthDecided),
    answers,
  };
}

/** A {@link PairwiseTally} saved: each item's counts as a column a count, and the answers. */
export interface PairwiseTallyState {
  items: Record<keyof ItemCounts, NumberArray>;
  answers: PairwiseFigures['answers'];
}

/**
 * A pairwise suite's report tally: each item answered in both orders as its counts, a byte
 * each (resampled by the bootstrap in report order), and every answer as shown. Tallies of
 * consecutive parts of a run merge into the whole's.
 */
export class PairwiseTally implements FamilyReportTally {
  private readonly items = {} as Record<keyof ItemCounts, NumberColumn>;
  private readonly answers = { firstShown: 0, secondShown: 0, tie: 0 };

  /** A tally of no result, or loaded from `state` (see `toState`). */
  constructor(
    private readonly suite: JudgeSuite,
    state?: PairwiseTallyState,
  ) {
    for (const count of COUNTS)
      this.items[count] = state ? NumberColumn.fromState(state.items[count]) : new NumberColumn();
    if (state) Object.assign(this.answers, state.answers);
  }

  /** Reads each result's two answers (a result without both counts for nothing). */
  add(result: ItemResult): void {
    const both = answersOf(result.details);
    if (!both) return;
    const [a, b] = this.suite.judge.pairwise!;
    const lengthA = result.input[a] === undefined ? undefined : storedFieldLength(result.input[a]);
    const lengthB = result.input[b] === undefined ? undefined : storedFieldLength(result.input[b]);
    const counts = itemCounts(both, lengthA, lengthB);
    for (const count of COUNTS) this.items[count].push(counts[count]);
    for (const shown of [both.ab, both.ba]) {
      if (shown === 'A') this.answers.firstShown += 1;
      else if (shown === 'B') this.answers.secondShown += 1;
      else this.answers.tie += 1;
    }
  }

  /** Appends `later`, the tally of the results that come after this one's. */
  merge(later: PairwiseTally): void {
    for (const count of COUNTS) this.items[count].merge(later.items[count]);
    addCounts(this.answers, later.answers);
  }

  toState(): PairwiseTallyState {
    const items = {} as PairwiseTallyState['items'];
    for (const count of COUNTS) items[count] = this.items[count].toState();
    return { items, answers: { ...this.answers } };
  }

  figures(): PairwiseFigures {
    const columns = {} as ItemCountColumns;
    for (const count of COUNTS) columns[count] = this.items[count].values();
    return pairwiseFigures(
      this.suite.judge.inconsistent ?? 'tie',
      columns,
      { ...this.answers },
      givenInBothOrders(this.suite) ? 'given' : 'asked',
    );
  }

  section(): ReportSection {
    return { metrics: { pairwise: this.figures() } };
  }
}

/** The pairwise figures of results in report order (a pairwise suite's). */
export function pairwiseReport(suite: JudgeSuite, results: Iterable<ItemResult>): ReportSection {
  const tally = new PairwiseTally(suite);
  for (const result of results) tally.add(result);
  return tally.section();
}

/** report.txt lines for the pairwise figures. */
export function pairwiseReportText(report: Report): string[] {
  const p = report.metrics.pairwise as PairwiseFigures | undefined;
  if (!p) return [];
  if (p.items === 0)
    return [
      '',
      'Pairwise: no item was answered in both orders (one verdict given by the dataset, or every item failed): no position figures',
    ];
  const rule =
    p.inconsistent === 'tie'
      ? 'counted as tie'
      : p.inconsistent === 'first'
        ? 'given the verdict of the dataset order'
        : 'failed';
  return [
    '',
    p.orders === 'given'
      ? "Pairwise: each item's verdicts given by the dataset in both orders (95% bootstrap CI over items)"
      : 'Pairwise: each item asked in both orders (95% bootstrap CI over items)',
    `  position consistency     ${withInterval(p.positionConsistency)}  (${p.consistentItems} of ${p.items} items the same after the swap; ${p.inconsistentItems} inconsistent, ${rule})`,
    `  first-position win rate  ${withInterval(p.firstPositionWinRate)}  (of ${p.firstPositionWinRate.n} non-tie answers; 0.5 = no position bias)`,
    `  longer-answer win rate   ${withInterval(p.longerAnswerWinRate)}  (of ${p.longerAnswerWinRate.n} non-tie answers between answers of different length)`,
    `  answers as shown: first ${p.answers.firstShown}, second ${p.answers.secondShown}, tie ${p.answers.tie}`,
  ];
}
