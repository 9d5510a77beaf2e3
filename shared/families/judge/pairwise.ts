/**
 * Pairwise judges: two answers compared, each item asked in both orders. Judges that compare
 * two answers tend to prefer the one shown first (or the longer one); asking twice, with the
 * answers swapped, shows how often the verdict survives the swap and how often the first-shown
 * answer wins.
 *
 * Vocabulary: an order's answer "as shown" is A (the answer shown first won), B (the answer
 * shown second won) or tie. In the dataset order (`ab`) that is also the verdict; in the
 * swapped order (`ba`) A as shown means the dataset's B won, and B means A.
 */

import type { ReportSection } from '../../family/types.js';
import { withInterval } from '../../lib/format.js';
import { bootstrapCis, type Indices } from '../../lib/metrics/index.js';
import { storedFieldLength } from '../../model/model.js';
import type { MetricValue, Report } from '../../model/report.js';
import type { ResultStream } from '../../model/report-order.js';
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

/** The figures of a pairwise run, from each item's counts (in report order, for reproducible CIs). */
export function pairwiseFigures(
  rule: InconsistentRule,
  items: readonly ItemCounts[],
  answers: PairwiseFigures['answers'],
): PairwiseFigures {
  // One pass over a resample sums every count; the three shares follow from the sums.
  const shares = (ix: Indices) => {
    const sum: ItemCounts = { consistent: 0, firstWins: 0, decided: 0, longerWins: 0, lengthDecided: 0 };
    for (const i of ix) {
      const c = items[i]!;
      sum.consistent += c.consistent;
      sum.firstWins += c.firstWins;
      sum.decided += c.decided;
      sum.longerWins += c.longerWins;
      sum.lengthDecided += c.lengthDecided;
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
  const { sum, values } = shares(items.map((_, i) => i));
  const cis = items.length > 0 ? bootstrapCis(items.length, (ix) => shares(ix).values) : {};
  const metric = (name: keyof typeof values, n: number): MetricValue => {
    const value = values[name];
    const ci = cis[name];
    return { value, n, ...(value !== null && ci ? { ci } : {}) };
  };
  const consistentItems = sum.consistent;
  return {
    inconsistent: rule,
    items: items.length,
    consistentItems,
    inconsistentItems: items.length - consistentItems,
    positionConsistency: metric('positionConsistency', items.length),
    firstPositionWinRate: metric('firstPositionWinRate', sum.decided),
    longerAnswerWinRate: metric('longerAnswerWinRate', sum.lengthDecided),
    answers,
  };
}

/** The family's report hook for a pairwise suite: reads each result's two answers as they stream. */
export async function pairwiseReport(suite: JudgeSuite, results: ResultStream): Promise<ReportSection> {
  const [a, b] = suite.judge.pairwise!;
  const items: ItemCounts[] = [];
  const answers = { firstShown: 0, secondShown: 0, tie: 0 };
  for await (const result of results) {
    const both = answersOf(result.details);
    if (!both) continue;
    const lengthA = result.input[a] === undefined ? undefined : storedFieldLength(result.input[a]);
    const lengthB = result.input[b] === undefined ? undefined : storedFieldLength(result.input[b]);
    items.push(itemCounts(both, lengthA, lengthB));
    for (const shown of [both.ab, both.ba]) {
      if (shown === 'A') answers.firstShown += 1;
      else if (shown === 'B') answers.secondShown += 1;
      else answers.tie += 1;
    }
  }
  return { metrics: { pairwise: pairwiseFigures(suite.judge.inconsistent ?? 'tie', items, answers) } };
}

/** report.txt lines for the pairwise figures. */
export function pairwiseReportText(report: Report): string[] {
  const p = report.metrics.pairwise as PairwiseFigures | undefined;
  if (!p) return [];
  if (p.items === 0)
    return [
      '',
      'Pairwise: no item was answered in both orders (verdicts given by the dataset, or every item failed): no position figures',
    ];
  const rule =
    p.inconsistent === 'tie'
      ? 'counted as tie'
      : p.inconsistent === 'first'
        ? 'given the verdict of the dataset order'
        : 'failed';
  return [
    '',
    'Pairwise: each item asked in both orders (95% bootstrap CI over items)',
    `  position consistency     ${withInterval(p.positionConsistency)}  (${p.consistentItems} of ${p.items} items the same after the swap; ${p.inconsistentItems} inconsistent, ${rule})`,
    `  first-position win rate  ${withInterval(p.firstPositionWinRate)}  (of ${p.firstPositionWinRate.n} non-tie answers; 0.5 = no position bias)`,
    `  longer-answer win rate   ${withInterval(p.longerAnswerWinRate)}  (of ${p.longerAnswerWinRate.n} non-tie answers between answers of different length)`,
    `  answers as shown: first ${p.answers.firstShown}, second ${p.answers.secondShown}, tie ${p.answers.tie}`,
  ];
}
