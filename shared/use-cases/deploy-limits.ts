import type { RawRow } from '../lib/datasets/read.js';
import { isSweep } from '../model/variants.js';
import type { RunStore } from '../ports/ports.js';
import { type Suite, variantSuites } from '../registry/suite.js';

/**
 * What a deployment allows an upload (AWS: the stack's context, given to ingest as
 * environment variables): how large a run may be, how many model calls an item may make, how
 * long an answer may be, and the budget a run gets when its suite names none. Unset or 0: no
 * limit of that kind.
 */
export interface DeployLimits {
  /** The most rows an uploaded dataset may have: a run stops reading there (see {@link itemLimitReason}). */
  maxItems?: number;
  /** The most runs × repeats one upload may start: a sweep's variants, each scoring its items `run.repeats` times. */
  maxVariantsTimesRepeats?: number;
  /** The most output tokens a model call may ask for: a suite whose `params.maxTokens` (in any variant) is higher is refused. */
  maxOutputTokens?: number;
  /** The budget (USD) of a run whose suite gives no `run.budgetUsd`. */
  defaultBudgetUsd?: number;
}

/**
 * The suite as the deployment lets it run: with the default budget when it names none (every
 * variant that sets no budget of its own gets it), or why it is refused. A refusal is final:
 * the suite must change, so ingest rejects the upload (no retry can help).
 */
export function deployLimited(
  suite: Suite,
  limits: DeployLimits = {},
): { suite: Suite } | { rejected: string } {
  const limited =
    positive(limits.defaultBudgetUsd) && suite.run.budgetUsd === undefined
      ? { ...suite, run: { ...suite.run, budgetUsd: limits.defaultBudgetUsd } }
      : suite;
  // Each run the upload starts: its variants', or the suite's own. A bad variant is refused
  // later, with its own message: here it counts as the suite.
  let runs: Suite[];
  try {
    runs = isSweep(limited) ? variantSuites(limited).map((v) => v.suite) : [limited];
  } catch {
    runs = [limited];
  }
  const maxTokens = limits.maxOutputTokens;
  if (positive(maxTokens)) {
    const over = runs.find((run) => run.params.maxTokens > maxTokens);
    if (over) {
      return {
        rejected: `params.maxTokens ${over.params.maxTokens}${over === limited ? '' : ` (in ${over.name})`} is above this deployment's maxOutputTokens (${maxTokens}): lower it, or deploy with a higher maxOutputTokens`,
      };
    }
  }
  const maxCalls = limits.maxVariantsTimesRepeats;
  if (positive(maxCalls)) {
    const samples = runs.reduce((sum, run) => sum + (run.run.repeats ?? 1), 0);
    if (samples > maxCalls) {
      return {
        rejected: `the upload would score each item ${samples} times (${runs.length} run${runs.length === 1 ? '' : 's'} × their run.repeats), above this deployment's maxVariantsTimesRepeats (${maxCalls}): use fewer variants or repeats, or deploy with a higher limit`,
      };
    }
  }
  return { suite: limited };
}

/** Why a run was stopped when its dataset had more rows than the deployment allows. */
export const itemLimitReason = (maxItems: number) =>
  `the upload has more than ${maxItems} rows, this deployment's maxItemsPerUpload: only the first ${maxItems} were read, and the run was stopped (split the dataset, sample it with run.sample, or deploy with a higher limit)`;

/**
 * The rows of a chunk of a dataset within the deployment's item limit. A chunk that reaches
 * past it (a row numbered above the limit, or rows to read after its last one at the limit)
 * stops the run (the reason in its record: the items already queued end as `stopped`) and is
 * cut to the rows within, as the last chunk: nothing past the limit is read.
 */
export async function withinItemLimit<R extends { rows: RawRow[]; next?: unknown }>(
  runStore: Pick<RunStore, 'stop'>,
  runId: string,
  read: R,
  limits: DeployLimits = {},
): Promise<R> {
  const max = limits.maxItems;
  if (!positive(max)) return read;
  const last = read.rows.at(-1)?.row ?? 0;
  if (last < max || (last === max && read.next === undefined)) return read;
  await runStore.stop?.(runId, itemLimitReason(max));
  return { ...read, rows: read.rows.filter((raw) => raw.row <= max), next: undefined };
}

const positive = (value: number | undefined): value is number => value !== undefined && value > 0;
