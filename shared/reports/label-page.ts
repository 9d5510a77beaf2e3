/**
 * What `assay label` puts on its page: the run's items without gold, ranked by how unsure the
 * judge was (label-uncertainty.ts), a sample of them drawn with known inclusion probabilities
 * (label-selection.ts), each with its inputs and the judge's verdict, and the keys a person
 * answers with.
 */
import { createHash } from 'node:crypto';
import { sampleForLabels } from '../lib/metrics/label-selection.js';
import { itemUncertainty, type ScorerView } from '../lib/metrics/label-uncertainty.js';
import type { ItemResult, RunRecord } from '../model/model.js';
import { scorersOf, taskFor } from '../registry/registry.js';
import type { LabelChoice, LabelPageData, LabelPageItem } from './html/types.js';

/** Whole-number scales longer than this are not offered as keys (a key per value, 1–9). */
const MAX_SCALE = 9;

export interface LabelSelectionOptions {
  /** How many items to choose. */
  n: number;
  seed: number;
  /** The uniform floor share (see label-selection.ts). */
  floor: number;
}

/** Why a run's items cannot be put to a person: the run's answers are not labels a person can give. */
export class NotLabellableError extends Error {}

function scorerOf(run: RunRecord): { view: ScorerView; labels: LabelChoice[] | 'seen' } {
  const family = taskFor(run.suite);
  const { scorers, primary } = scorersOf(family, run.suite as never);
  const scorer = scorers[primary]!;
  const metrics = (scorer.metrics ?? {}) as { labelOrder?: readonly string[]; threshold?: number };
  const judge = (run.suite as { judge?: unknown }).judge;
  const range =
    judge !== null && typeof judge === 'object' && Array.isArray((judge as { range?: unknown }).range)
      ? ((judge as { range: [number, number] }).range as readonly [number, number])
      : undefined;
  const view: ScorerView = {
    name: primary,
    ...(range ? { range } : {}),
    ...(metrics.threshold !== undefined ? { threshold: metrics.threshold } : {}),
  };
  if (scorer.kind === 'label')
    return { view, labels: metrics.labelOrder ? keys(metrics.labelOrder) : 'seen' };
  if (
    scorer.kind === 'number' &&
    range &&
    Number.isInteger(range[0]) &&
    Number.isInteger(range[1]) &&
    range[1] - range[0] + 1 <= MAX_SCALE
  ) {
    const values: string[] = [];
    for (let v = range[0]; v <= range[1]; v += 1) values.push(String(v));
    const t = metrics.threshold;
    return {
      view,
      labels: keys(values).map((choice) =>
        t === undefined ? choice : { ...choice, hint: Number(choice.value) >= t ? 'pass' : 'fail' },
      ),
    };
  }
  throw new NotLabellableError(
    `the run's ${primary} scorer gives ${scorer.kind === 'number' ? 'numbers' : `${scorer.kind} values`} that are not labels a person can pick from a short list: assay label needs a judge answering one of some labels, or a whole number on a scale of at most ${MAX_SCALE} values (a judge \`range\` such as [1, 5])`,
  );
}

/** The keys of some labels: 1–9 for the first nine, and the first letter where it is unambiguous. */
export function keys(labels: readonly string[]): LabelChoice[] {
  const firsts = labels.map((l) => l.trim().charAt(0).toLowerCase());
  return labels.map((value, i) => {
    const letter = firsts[i]!;
    const unique =
      /^[a-z]$/.test(letter) &&
      letter !== 'u' &&
      letter !== 's' &&
      firsts.filter((f) => f === letter).length === 1;
    return {
      value,
      ...(i < 9 ? { digit: String(i + 1) } : {}),
      ...(unique ? { letter } : {}),
    };
  });
}

const hasGold = (r: ItemResult) => r.gold !== undefined && r.gold.trim() !== '';

/** The evidence behind a verdict, as short texts: the repeats' values, or each judge's vote. */
function evidenceOf(result: ItemResult, scorer: string): string[] | undefined {
  const score = result.scores[scorer];
  const repeats = score?.repeats;
  if (repeats && repeats.length > 1)
    return repeats.map((v, i) => `repeat ${i + 1}: ${v === null ? 'none' : String(v)}`);
  const votes = result.details?.votes;
  if (Array.isArray(votes) && votes.length > 1) {
    return votes.map((vote) => {
      const { backend, label } = (vote ?? {}) as { backend?: unknown; label?: unknown };
      return `${String(backend ?? 'judge')}: ${label === undefined || label === null ? 'none' : String(label)}`;
    });
  }
  return undefined;
}

export interface LabelPlan {
  page: LabelPageData;
  /** Items with gold already, and items the judge gave no verdict on: not candidates. */
  labelled: number;
  noVerdict: number;
}

/** Chooses the items of `results` (one run's) to label and builds the page's data. */
export function planLabels(
  run: RunRecord,
  results: readonly ItemResult[],
  options: LabelSelectionOptions,
): LabelPlan {
  const { view, labels } = scorerOf(run);
  let labelled = 0;
  let noVerdict = 0;
  const candidates: ItemResult[] = [];
  for (const result of results) {
    if (hasGold(result)) labelled += 1;
    else {
      const score = result.scores[view.name];
      if (result.status !== 'scored' || score === undefined || 'unscored' in score) noVerdict += 1;
      else candidates.push(result);
    }
  }
  if (candidates.length === 0) {
    throw new NotLabellableError(
      `run ${run.runId} has no item to label: ${labelled} with gold already, ${noVerdict} without a verdict of the judge (${view.name})`,
    );
  }
  // Candidates in a fixed order (by id), so that the same run and seed choose the same items.
  candidates.sort((a, b) => (a.itemId < b.itemId ? -1 : a.itemId > b.itemId ? 1 : 0));
  const readings = candidates.map((r) => itemUncertainty(r, view));
  const known = readings.filter((r) => r !== undefined);
  const signals: Record<string, number> = {};
  for (const r of known) signals[r.signal] = (signals[r.signal] ?? 0) + 1;
  // Items the run says nothing about count as unsure as the average of those it does.
  const fill = known.length > 0 ? known.reduce((s, r) => s + r.value, 0) / known.length : 0;
  const uncertainty = readings.map((r) => r?.value ?? fill);
  const uniform = uncertainty.every((u) => u === 0);
  const sample = sampleForLabels(uncertainty, options.n, options.seed, options.floor);
  const labelSet =
    labels === 'seen'
      ? keys(
          [
            ...new Set(
              results.flatMap((r) => {
                const score = r.scores[view.name];
                return [
                  ...(hasGold(r) ? [r.gold!] : []),
                  ...(score && !('unscored' in score) ? [String(score.value)] : []),
                ];
              }),
            ),
          ].sort(),
        )
      : labels;
  const items: LabelPageItem[] = sample.chosen.map((i) => {
    const result = candidates[i]!;
    const score = result.scores[view.name]!;
    const reading = readings[i];
    const evidence = evidenceOf(result, view.name);
    return {
      id: result.itemId,
      row: result.row,
      p: sample.probabilities[i]!,
      uncertainty: known.length > 0 ? uncertainty[i]! : null,
      signal: reading?.signal ?? null,
      inputs: Object.entries(result.input),
      verdict: {
        value: String(score.value),
        ...(score.explanation ? { explanation: score.explanation } : {}),
        ...(score.decidedBy ? { decidedBy: score.decidedBy } : {}),
        ...(evidence ? { evidence } : {}),
      },
    };
  });
  const note =
    known.length === 0
      ? 'The run holds no sign of how sure the judge was (no repeats, no several judges, no stated confidence, no score near a threshold): the items were chosen uniformly at random. Run the suite with run.repeats ≥ 2 to choose where the judge is least sure.'
      : uniform
        ? 'The judge was equally sure of every item (its repeats or judges always agreed): the items were chosen uniformly at random.'
        : `Items were chosen with probability growing with the judge's uncertainty (${Object.entries(signals)
            .map(([s, k]) => `${s}: ${k} items`)
            .join(', ')}), never below a uniform floor of ${options.floor} of the budget.`;
  const storageKey = `assay-label:${run.runId}:${createHash('sha256')
    .update(items.map((item) => item.id).join('\n'))
    .digest('hex')
    .slice(0, 16)}`;
  return {
    labelled,
    noVerdict,
    page: {
      runId: run.runId,
      suiteName: run.suiteName,
      task: run.suite.task,
      simulated: run.simulated,
      storageKey,
      scorer: view.name,
      labels: labelSet,
      selection: {
        candidates: candidates.length,
        budget: options.n,
        seed: options.seed,
        floor: options.floor,
        signals,
        uniform: known.length === 0 || uniform,
        note,
      },
      items,
      rubric: rubricOf(run),
    },
  };
}

/** The run's prompts in the family's order of roles (its first, the judge's own rubric, first). */
function rubricOf(run: RunRecord): { path: string; text: string }[] {
  const order = Object.values(taskFor(run.suite).promptPaths(run.suite as never));
  const rank = (path: string) => {
    const at = order.indexOf(path);
    return at < 0 ? order.length : at;
  };
  return Object.entries(run.prompts)
    .sort(([a], [b]) => rank(a) - rank(b))
    .map(([path, prompt]) => ({ path, text: prompt.text }));
}
