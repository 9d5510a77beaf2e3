import type { RawRow } from '../lib/datasets/read.js';
import {
  EMBEDDED_PRICES,
  honouredPrices,
  ignoredPricesNote,
  type PriceTable,
  priceOf,
} from '../lib/providers/pricing.js';
import { resolveProviderId } from '../model/provider-ids.js';
import { isPlainObject, isSweep } from '../model/variants.js';
import type { RunStore } from '../ports/ports.js';
import { encodersOf } from '../registry/registry.js';
import { type Suite, variantSuites } from '../registry/suite.js';

/**
 * What a deployment allows an upload (AWS: the stack's context, given to ingest as
 * environment variables): how large a run may be, how many model calls an item may make, how
 * long an answer may be, the budget a run gets when its suite names none and the most it may
 * name, and the models it may call. Unset or 0: no limit of that kind.
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
  /**
   * The most `run.budgetUsd` a run may have (USD): a suite (or a variant) naming more is
   * refused; a run whose suite names none, with no default budget, gets this one.
   */
  maxRunBudgetUsd?: number;
  /**
   * The models (`vendor:model` ids) an upload may call, backends and paid encoders alike; `any`:
   * every model. Unset: the models {@link DeployLimits.prices} prices. The simulator and local
   * encoders (`sim:`, `onnx:`) are always allowed: they call no vendor.
   */
  allowedModels?: readonly string[] | 'any';
  /**
   * The deployment's price table (default: the embedded one). A suite's `run.prices` may add a
   * price for a model it lacks, never change one it has (see {@link deployLimited}).
   */
  prices?: PriceTable;
}

/**
 * The suite as the deployment lets it run, or why it is refused. Every run it starts (a sweep's
 * variants, or the suite) gets a budget (its own, else the default, else the deployment's
 * maximum); its `run.prices` keep only the models the deployment does not price (an entry for a
 * model it prices is dropped and `run.prices.notes` says so: the deployment's price applies,
 * whatever the suite said). A refusal is final: the suite must change, so ingest rejects the
 * upload (no retry can help).
 */
export function deployLimited(
  suite: Suite,
  limits: DeployLimits = {},
): { suite: Suite } | { rejected: string } {
  const table = limits.prices ?? EMBEDDED_PRICES;
  const limited = withDeployPrices(withBudget(suite, limits), table);
  // Each run the upload starts: its variants', or the suite's own. A bad variant is refused
  // later, with its own message: here it counts as the suite.
  let runs: Suite[];
  try {
    runs = isSweep(limited) ? variantSuites(limited).map((v) => v.suite) : [limited];
  } catch {
    runs = [limited];
  }
  const where = (run: Suite) => (run === limited ? '' : ` (in ${run.name})`);
  const maxTokens = limits.maxOutputTokens;
  if (positive(maxTokens)) {
    const over = runs.find((run) => run.params.maxTokens > maxTokens);
    if (over) {
      return {
        rejected: `params.maxTokens ${over.params.maxTokens}${where(over)} is above this deployment's maxOutputTokens (${maxTokens}): lower it, or deploy with a higher maxOutputTokens`,
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
  const maxBudget = limits.maxRunBudgetUsd;
  if (positive(maxBudget)) {
    const over = runs.find((run) => (run.run.budgetUsd ?? 0) > maxBudget);
    if (over) {
      return {
        rejected: `run.budgetUsd $${over.run.budgetUsd}${where(over)} is above this deployment's maxRunBudgetUsd ($${maxBudget}): lower it, or deploy with a higher maxRunBudgetUsd`,
      };
    }
  }
  const refused = disallowedModel(runs, limits.allowedModels, table);
  if (refused) {
    const run = refused.run;
    const which =
      limits.allowedModels === undefined
        ? 'the models its price table prices'
        : (limits.allowedModels as readonly string[]).join(', ') || 'none';
    return {
      rejected: `${refused.kind} ${refused.id}${where(run)} is not a model this deployment allows (allowedModels: ${which}): use one it allows, or deploy with ${refused.id} in allowedModels (-c allowedModels=…)`,
    };
  }
  return { suite: limited };
}

/** The suite with the budget the deployment gives a run whose suite names none: the default, else the maximum. */
function withBudget(suite: Suite, limits: DeployLimits): Suite {
  if (suite.run.budgetUsd !== undefined) return suite;
  const { defaultBudgetUsd: fallback, maxRunBudgetUsd: max } = limits;
  const budgetUsd = positive(fallback)
    ? positive(max)
      ? Math.min(fallback, max)
      : fallback
    : positive(max)
      ? max
      : undefined;
  return budgetUsd === undefined ? suite : { ...suite, run: { ...suite.run, budgetUsd } };
}

/**
 * The suite with every `run.prices` it holds (its own, a variant's `options.run`, the matrix's
 * `options.run` choices) kept to the models `table` does not price, each with a note naming
 * the models whose entry was dropped. A malformed `run.prices` is left for the run's own
 * checks to refuse, with their message.
 */
function withDeployPrices(suite: Suite, table: PriceTable): Suite {
  const keep = (prices: unknown): unknown => {
    let honoured: ReturnType<typeof honouredPrices>;
    try {
      honoured = honouredPrices(table, prices, 'add', "the suite's run.prices");
    } catch {
      return prices;
    }
    if (!honoured.prices || honoured.ignored.length === 0) return prices;
    const note = ignoredPricesNote(honoured.ignored);
    return { ...honoured.prices, notes: [honoured.prices.notes, note].filter(Boolean).join(' — ') };
  };
  /** A `run` block (of the suite or an overlay) with its prices kept to what applies. */
  const runBlock = (run: unknown): unknown =>
    isPlainObject(run) && run.prices !== undefined ? { ...run, prices: keep(run.prices) } : run;
  /** Variant options with their `run` block's prices kept to what applies. */
  const options = (opts: Record<string, unknown> | undefined) =>
    opts && isPlainObject(opts.run) ? { ...opts, run: runBlock(opts.run) } : opts;
  const out: Suite = { ...suite, run: runBlock(suite.run) as Suite['run'] };
  if (suite.variants)
    out.variants = suite.variants.map((v) => (v.options ? { ...v, options: options(v.options) } : v));
  const matrixRuns = suite.matrix?.options?.run;
  if (suite.matrix && Array.isArray(matrixRuns)) {
    out.matrix = {
      ...suite.matrix,
      options: { ...suite.matrix.options, run: matrixRuns.map(runBlock) },
    };
  }
  return out;
}

/** A model a run would call that the deployment does not allow: a backend, or a paid embedder or NLI model. */
function disallowedModel(
  runs: readonly Suite[],
  allowed: DeployLimits['allowedModels'],
  table: PriceTable,
): { run: Suite; kind: string; id: string } | undefined {
  if (allowed === 'any') return undefined;
  const allows = allowedSet(allowed, table);
  for (const run of runs) {
    for (const backend of run.backends) {
      const id = resolvedId(backend);
      // An id that resolves to nothing is refused by the backend check, with its own message.
      if (id !== undefined && callsVendor(id) && !allows.has(id)) return { run, kind: 'backend', id };
    }
    for (const encoder of encodersIn(run)) {
      if (callsVendor(encoder.id) && !allows.has(encoder.id))
        return { run, kind: encoder.kind === 'embed' ? 'embedder' : 'NLI model', id: encoder.id };
    }
  }
  return undefined;
}

/**
 * The ids a deployment allows: the list given (aliases resolved), else every model its table
 * prices (a wildcard entry, `llamacpp:*`, allowing every model it prices).
 */
function allowedSet(allowed: readonly string[] | undefined, table: PriceTable): { has(id: string): boolean } {
  if (allowed === undefined) return { has: (id) => priceOf(table, id) !== undefined };
  const ids = new Set(allowed.map((id) => resolvedId(id) ?? id));
  return { has: (id) => ids.has(id) };
}

/** False for the simulator and local models: they call no vendor, so cost nothing. */
const callsVendor = (id: string) => !id.startsWith('sim:') && !id.startsWith('onnx:');

function resolvedId(backend: string): string | undefined {
  try {
    return resolveProviderId(backend).id;
  } catch {
    return undefined;
  }
}

function encodersIn(run: Suite): { kind: string; id: string }[] {
  try {
    return encodersOf(run);
  } catch {
    return [];
  }
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
