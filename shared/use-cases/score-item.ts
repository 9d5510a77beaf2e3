import type { AnyTaskFamily, Solved, TaskContext } from '../family/types.js';
import type { EncoderPool } from '../lib/encoders/registry.js';
import type { EncoderSpend } from '../lib/encoders/types.js';
import { combineRepeats } from '../lib/metrics/reliability.js';
import { injectionSigns } from '../lib/prompts/injection.js';
import { renderPrompt, type TemplateFormat } from '../lib/prompts/prompts.js';
import { callModel } from '../lib/providers/call.js';
import {
  EMBEDDED_PRICES,
  maxCostOf,
  type PriceTable,
  type SuitePriceRule,
  withSuitePrices,
} from '../lib/providers/pricing.js';
import type { RateLimiters } from '../lib/providers/rate-limit/limiters.js';
import { suiteLimitsById } from '../lib/providers/rate-limit/spec.js';
import { DeferredError, ProviderError, RunNotFoundError, StoppedError } from '../model/errors.js';
import {
  type Failure,
  type Item,
  type ItemMessage,
  type ItemResult,
  inputDigest,
  isScored,
  partOf,
  RESULT_SCHEMA_VERSION,
  type RunRecord,
  type Score,
  type ScoredScore,
  type StageSpend,
} from '../model/model.js';
import type { Completion, CompletionRequest, LlmProvider } from '../model/provider.js';
import { storableResult } from '../model/result-size.js';
import { redactSecrets } from '../model/secrets.js';
import { STORED_FIELD_CHARS, storedFields } from '../model/stored-text.js';
import type { AggregateTrigger, LlmCache, RecordOutcome, RunStore } from '../ports/ports.js';
import { dataPlaceholders, taskFor } from '../registry/registry.js';
import type { RecordResult } from './record-batch.js';

export interface ScoreItemDeps {
  runStore: RunStore;
  /** How the item's result is recorded; default `runStore.recordResult` (the worker records a batch's together, record-batch.ts). */
  record?: RecordResult;
  trigger: AggregateTrigger;
  cache?: LlmCache;
  /** Builds (or returns the already built) provider for a backend id of a run. */
  providerFor(backend: string, run: RunRecord): LlmProvider;
  /** Embedders and NLI models, for families that score with them (summarization). */
  encoders?: EncoderPool;
  /** Attempts per model call for retryable errors. Default: the suite's `run.maxAttempts`. */
  maxAttempts?: number;
  /**
   * What a retryable provider error that outlived its attempts does: `throw` hands the item
   * back to the queue (AWS: SQS redelivers it later), `fail` records a failed result (local).
   */
  onTransientError: 'throw' | 'fail';
  /**
   * The process's rate limiters (one per provider+model, see `rate-limit/limiters.ts`): every call to a
   * real model goes through its limiter, under the suite's `run.limits` and ASSAY_LIMITS.
   */
  limiters?: RateLimiters;
  /**
   * Hears each model call as it starts (its promise): the batch lane waits for an item's
   * parallel calls to settle before it decides what the item waits for.
   */
  onCallStarted?: (pending: Promise<Completion>) => void;
  /**
   * The process's price table, that a run's budget projects each call's most cost at (the
   * suite's `run.prices` merged over it, as {@link ScoreItemDeps.suitePrices} says). Default:
   * the embedded table.
   */
  prices?: PriceTable;
  /**
   * How the suite's `run.prices` meet {@link ScoreItemDeps.prices}: `override` (default, a local
   * run: the suite's prices win) or `add` (a deployment: the suite may only price models the
   * table lacks). The providers must cost calls by the same rule.
   */
  suitePrices?: SuitePriceRule;
  /** Called after each model call, e.g. to feed a live cost counter. */
  onCall?: (completion: Completion) => void;
  /**
   * The run record to use instead of the stored one: the local shell resumes a run under this
   * invocation's run settings (a higher budget, another concurrency).
   */
  run?: RunRecord;
  now?: () => Date;
}

/** A call refused because the run's budget is spent: the item fails as `budget`, and a resume retries it. */
export class BudgetExceededError extends StoppedError {
  override readonly name = 'BudgetExceededError';
}

/**
 * Thrown by a model call whose answer will come from a vendor batch (the batch lane): the item
 * stops here, records nothing, and is solved again once the batch has answered. Not a failure
 * (a {@link DeferredError}: neither permanent nor retryable): retries pass it up at once, the
 * item is handed back rather than failed, ingest never rejects for it. `stage` is the family's
 * stage name, filled in by the task context.
 */
export class DeferredCall extends DeferredError {
  override readonly name = 'DeferredCall';
  stage = '';
  constructor(
    readonly key: string,
    readonly request: CompletionRequest,
    /** The backend as the suite names it. */
    readonly backend: string,
  ) {
    super(`the answer to ${backend} call ${key.slice(0, 12)} comes from a batch`);
  }
}

/**
 * Runs are immutable once started: cache their records per process (per Lambda container). The
 * read itself is shared: a container's concurrent records of one run read it once, not once each.
 */
const runCache = new WeakMap<RunStore, Map<string, Promise<RunRecord>>>();

/** The run record, read once per process. */
export function loadRun(store: RunStore, runId: string): Promise<RunRecord> {
  let byId = runCache.get(store);
  if (!byId) {
    byId = new Map();
    runCache.set(store, byId);
  }
  const cached = byId.get(runId);
  if (cached) return cached;
  const loading = store.getRun(runId).then((run) => {
    if (!run) throw new RunNotFoundError(runId, `run ${runId} not found`);
    return run;
  });
  byId.set(runId, loading);
  // A failed read is not kept: the next record reads again.
  loading.catch(() => byId.delete(runId));
  return loading;
}

/** Each run's price table (the process's, with the suite's `run.prices` over it), worked out once per run record and rule. */
const pricesByRun: Record<SuitePriceRule, WeakMap<RunRecord, PriceTable>> = {
  override: new WeakMap(),
  add: new WeakMap(),
};

/**
 * The prices a run's budget projects its calls at: the process's table with the suite's
 * `run.prices` merged over it as `rule` lets them apply (`add`: a model the table prices keeps
 * the table's price).
 */
export function runPrices(table: PriceTable, run: RunRecord, rule: SuitePriceRule = 'override'): PriceTable {
  let prices = pricesByRun[rule].get(run);
  if (!prices) {
    prices = withSuitePrices(table, run.suite.run.prices, rule, "the suite's run.prices");
    pricesByRun[rule].set(run, prices);
  }
  return prices;
}

/** Renders a family's prompt roles from a run's snapshot, data placeholders escaped. */
export function promptRenderer(
  family: AnyTaskFamily,
  run: Pick<RunRecord, 'suite' | 'prompts'>,
): (role: string, vars: Record<string, string>, format?: TemplateFormat) => string {
  const paths = family.promptPaths(run.suite);
  return (role, vars, format) => {
    const path = paths[role];
    const snapshot = path === undefined ? undefined : run.prompts[path];
    if (!path || !snapshot) throw new Error(`prompt role ${role} has no file in this run`);
    return renderPrompt(snapshot.text, vars, path, dataPlaceholders(family, role), format);
  };
}

/** The context a family solves and scores one item in: its prompts, backends and a costed `call`. */
function taskContext(
  deps: ScoreItemDeps,
  run: RunRecord,
  item: Item,
  family: AnyTaskFamily,
  stages: Record<string, StageSpend>,
  onCompletion: (completion: Completion) => void,
  /** Which repeat of the item this context scores (1 unless the suite sets `run.repeats`). */
  sample = 1,
): TaskContext {
  const { suite } = run;
  const maxAttempts = deps.maxAttempts ?? suite.run.maxAttempts;
  // Without `run.cache` answers are not shared, but what an item paid for is still kept for it.
  const reuse = suite.run.cache ? 'any' : 'own';
  const budget = suite.run.budgetUsd;
  const prices =
    budget === undefined ? undefined : runPrices(deps.prices ?? EMBEDDED_PRICES, run, deps.suitePrices);
  const holder = { itemId: item.id, row: item.row };
  const paths = family.promptPaths(suite);
  const limits = deps.limiters ? suiteLimitsById(suite.run) : undefined;
  return {
    suite,
    prompts: run.prompts,
    paths,
    backends: suite.backends.map((backend) => deps.providerFor(backend, run)),
    render: promptRenderer(family, run),
    async call(stage: string, provider: LlmProvider, given: CompletionRequest) {
      // Repeats after the first are other samples of the same call: their own cache key and noise.
      const request = sample > 1 ? { ...given, sample } : given;
      // The most the call may cost is reserved before it is sent, and refused when it does not
      // fit what the run's budget has left (spent, plus what calls in flight hold).
      const reservation = prices ? maxCostOf(prices, provider.id, request).usd : 0;
      if (budget !== undefined && !(await deps.runStore.reserve(run.runId, holder, reservation, budget))) {
        const spent = await deps.runStore.spent(run.runId);
        const why =
          reservation > budget
            ? `one call may cost up to $${reservation.toPrecision(3)} (its prompt and its most output, params.maxTokens), more than the whole budget`
            : `this call may cost up to $${reservation.toPrecision(3)}; $${spent.toFixed(4)} is spent and the rest is held by calls in flight`;
        throw new BudgetExceededError(
          `the run's budget of $${budget} has no room left: ${why}; raise run.budgetUsd and run again to resume`,
        );
      }
      const settle = (actualUsd: number) =>
        budget === undefined
          ? undefined
          : deps.runStore.settleReservation(run.runId, holder, reservation, actualUsd);
      let completion: Completion;
      try {
        const pending = callModel(provider, request, {
          cache: deps.cache,
          reuse,
          maxAttempts,
          payer: payerOf(run, item),
          // The simulator never rate-limits: it skips the limiter.
          limiter:
            limits && !provider.simulated
              ? deps.limiters!.for(provider.id, limits, suite.run.concurrency)
              : undefined,
        });
        deps.onCallStarted?.(pending);
        completion = await pending;
      } catch (error) {
        if (error instanceof DeferredCall) error.stage = stage;
        // Nothing was bought: the reservation goes back (its failure must not hide the call's).
        await settle(0)?.catch(() => undefined);
        throw error;
      }
      // What the call cost the item (a hit on an answer someone else paid for: nothing).
      await settle(completion.cached && completion.savedUsd !== undefined ? 0 : completion.costUsd);
      bookSpend(stages, stage, completion);
      onCompletion(completion);
      deps.onCall?.(completion);
      return completion;
    },
    async embed(stage, id, texts) {
      const embedder = encoders().embedder(id);
      const { vectors, spend } = await embedder.embed(texts);
      book(stage, id, embedder.simulated, spend);
      return vectors;
    },
    async contradiction(stage, id, pairs) {
      const model = encoders().nli(id);
      const { probabilities, spend } = await model.contradiction(pairs);
      book(stage, id, model.simulated, spend);
      return probabilities;
    },
  };

  function encoders(): EncoderPool {
    if (!deps.encoders) throw new Error('this shell runs no embedders or NLI models');
    return deps.encoders;
  }

  /** An encoder call booked like a model call: input tokens, cost and time under its stage. */
  function book(stage: string, providerId: string, simulated: boolean, spend: EncoderSpend) {
    const completion: Completion = {
      text: '',
      finishReason: 'stop',
      usage: { input: spend.tokens, output: 0, cached: 0 },
      costUsd: spend.costUsd,
      ...(spend.priced === false ? { priced: false as const } : {}),
      latencyMs: spend.latencyMs,
      cached: false,
      simulated,
      providerId,
    };
    bookSpend(stages, stage, completion);
    onCompletion(completion);
    deps.onCall?.(completion);
  }
}

/** Why a thrown error ends the item: budget, provider, or a bug of ours. */
function failureOf(error: unknown): Failure {
  // Whatever carried the error (a vendor's body, an SDK's message), no secret is recorded.
  const message = redactSecrets(error instanceof Error ? `${error.name}: ${error.message}` : String(error));
  if (error instanceof BudgetExceededError) return { kind: 'budget', message: error.message };
  return { kind: error instanceof ProviderError ? 'provider' : 'internal', message };
}

/** Who pays for an item's calls (see `CallOptions.payer`). */
export const payerOf = (run: Pick<RunRecord, 'runId'>, item: Pick<Item, 'id'>) => `${run.runId}/${item.id}`;

/** Errors that hand the item back instead of failing it: a transient one (AWS), or work deferred (a call a batch will answer). */
function handsBack(error: unknown, deps: ScoreItemDeps): boolean {
  if (error instanceof DeferredError) return true;
  return error instanceof ProviderError && error.retryable && deps.onTransientError === 'throw';
}

/**
 * Solves one item (or reads the output the dataset gives), runs every scorer on the output,
 * and records exactly one result. A redelivered message records nothing new (the store's
 * conditional write) but still checks completion, so a crash between recording and
 * triggering cannot strand a run.
 */
export async function scoreItem(
  deps: ScoreItemDeps,
  message: ItemMessage,
): Promise<{ result: ItemResult; outcome: RecordOutcome }> {
  const run = deps.run?.runId === message.runId ? deps.run : await loadRun(deps.runStore, message.runId);
  const { item } = message;
  const family = taskFor(run.suite);
  const stages: Record<string, StageSpend> = {};
  let simulated = false;
  const onCompletion = (completion: Completion) => {
    simulated ||= completion.simulated;
  };

  /** Solves the item and runs every scorer on the output, as sample `sample` of its calls. */
  const attempt = async (sample: number): Promise<Attempt> => {
    const ctx = taskContext(deps, run, item, family, stages, onCompletion, sample);
    let solved: Solved<unknown>;
    try {
      solved = item.given
        ? family.readOutput(item.given, item, run.suite, sample)
        : await family.solve(item, ctx);
    } catch (error) {
      if (handsBack(error, deps)) throw error;
      solved = { ok: false, failure: failureOf(error) };
    }

    const scores: Record<string, Score> = {};
    if (solved.ok) {
      for (const [name, scorer] of Object.entries(family.scorers(run.suite))) {
        try {
          scores[name] = await scorer.score(solved.output, item, ctx);
        } catch (error) {
          if (handsBack(error, deps)) throw error;
          scores[name] = { kind: scorer.kind, unscored: failureOf(error) };
        }
      }
    }
    return { solved, scores };
  };

  const repeats = run.suite.run.repeats ?? 1;
  const { solved, scores } = repeats > 1 ? await repeated(family, run, repeats, attempt) : await attempt(1);

  // The inputs as the result keeps them (long fields cut), which its digest is of.
  const { input, columns } = storedFields(item.input, item.columns);
  const signs = injectionSigns(item.input);
  const built: ItemResult = {
    schemaVersion: RESULT_SCHEMA_VERSION,
    runId: run.runId,
    itemId: item.id,
    row: item.row,
    status: solved.ok ? 'scored' : 'failed',
    ...(item.gold !== undefined ? { gold: item.gold } : {}),
    input,
    // The row's other columns, cut for the store with the inputs (one budget for both).
    ...(columns ? { columns } : {}),
    ...(item.annotations ? { annotations: item.annotations } : {}),
    inputDigest: inputDigest({ input, gold: item.gold }),
    ...(solved.ok ? { output: solved.output } : { failure: solved.failure }),
    scores,
    ...(solved.details ? { details: solved.details } : {}),
    ...(!solved.ok && solved.raw !== undefined ? { raw: solved.raw } : {}),
    // A row whose data reads like a verdict or an instruction to the model is flagged, scored or not.
    ...(signs.length > 0 ? { injection: signs } : {}),
    stages,
    prompts: promptHashes(run),
    simulated: simulated || run.simulated,
    finishedAt: (deps.now ?? (() => new Date()))().toISOString(),
    ...partOf(message.part),
  };
  // Every long text bounded, and a result still too large for any store failed as `storage`:
  // both shells record the same result, and no store refuses it.
  const result = storableResult(built);
  const recorded = deps.record ? await deps.record(result) : await deps.runStore.recordResult(result);
  if (recorded.complete) await deps.trigger.trigger(run.runId);
  return { result, outcome: recorded };
}

/** One pass over an item: what solving gave, and each scorer's score of it. */
interface Attempt {
  solved: Solved<unknown>;
  scores: Record<string, Score>;
}

/**
 * The item scored `repeats` times (`run.repeats`), each repeat's model calls made as samples
 * 1…k, all at once (so the batch lane defers every repeat's calls in the same round), and
 * combined: each scorer's value is the majority label or pass (a tie goes to the value the
 * earliest repeat gave) or the mean number, with every repeat's value kept in `repeats`.
 * The output, details and a score's explanation are those of the first repeat that gave the
 * item's value (of the primary scorer, for output and details). An item no repeat could solve
 * fails as its first repeat did.
 */
async function repeated(
  family: AnyTaskFamily,
  run: RunRecord,
  repeats: number,
  attempt: (sample: number) => Promise<Attempt>,
): Promise<Attempt> {
  const settled = await Promise.allSettled(Array.from({ length: repeats }, (_, i) => attempt(i + 1)));
  const rejected = settled.find((s) => s.status === 'rejected');
  if (rejected) throw rejected.reason;
  const attempts = settled.map((s) => (s as PromiseFulfilledResult<Attempt>).value);
  const solvedOnes = attempts.filter((a) => a.solved.ok);
  if (solvedOnes.length === 0) return attempts[0]!;

  const scores: Record<string, Score> = {};
  for (const [name, scorer] of Object.entries(family.scorers(run.suite))) {
    const own = attempts.map((a) => a.scores[name]);
    const values = own.map((score) => (isScored(score) ? score.value : null));
    const combined = combineRepeats(scorer.kind, values);
    if (!combined) {
      // Every repeat unscored: a solved repeat scored every scorer, so its reason is there.
      scores[name] = { ...own.find((score) => score !== undefined)!, repeats: values };
      continue;
    }
    // The facts of the first repeat that gave this value (for a mean: the first scored repeat).
    const source =
      own.find((score) => isScored(score) && score.value === combined.value) ?? own.find(isScored);
    const { repeats: _r, tie: _t, ...facts } = source as ScoredScore;
    scores[name] = {
      ...facts,
      kind: scorer.kind,
      value: combined.value,
      repeats: values,
      ...(combined.tie ? { tie: true } : {}),
    } as Score;
  }
  const primary = scores[family.primaryScorer(run.suite)];
  const chosen =
    (isScored(primary) &&
      solvedOnes.find((a) => {
        const own = a.scores[family.primaryScorer(run.suite)];
        return isScored(own) && own.value === primary.value;
      })) ||
    solvedOnes[0]!;
  return { solved: chosen.solved, scores };
}

/** Each run's prompt hashes as results carry them: worked out once per run record, not per item. */
const promptHashesByRun = new WeakMap<RunRecord['prompts'], Record<string, string>>();
function promptHashes(run: Pick<RunRecord, 'prompts'>): Record<string, string> {
  let hashes = promptHashesByRun.get(run.prompts);
  if (!hashes) {
    hashes = Object.fromEntries(Object.entries(run.prompts).map(([path, p]) => [path, p.hash]));
    promptHashesByRun.set(run.prompts, hashes);
  }
  return hashes;
}

/** Input fields longer than this are stored cut in results (see {@link storedInput}). */
export { STORED_FIELD_CHARS };

/**
 * The item's input as its result keeps it: a field longer than {@link STORED_FIELD_CHARS} (a
 * long document, which travelled by S3 reference) is kept as its opening, its length and its
 * digest, and the fields together are held to what a stored result may keep (`storedFields`).
 * The dataset keeps the full text.
 */
export function storedInput(input: Record<string, string>): Record<string, string> {
  return storedFields(input).input;
}

function bookSpend(stages: Record<string, StageSpend>, stage: string, completion: Completion) {
  const spend = stages[stage] ?? {
    calls: 0,
    cachedCalls: 0,
    costUsd: 0,
    latencyMs: 0,
    usage: { input: 0, output: 0, cached: 0 },
  };
  stages[stage] = spend;
  spend.calls += 1;
  spend.latencyMs += completion.latencyMs;
  if (completion.cached) {
    spend.cachedCalls += 1;
    // A hit on someone else's answer cost nothing and sent no tokens: count it, bill nothing.
    if (completion.savedUsd !== undefined) {
      spend.savedUsd = (spend.savedUsd ?? 0) + completion.savedUsd;
      return;
    }
  }
  spend.costUsd += completion.costUsd;
  if (completion.priced === false && !spend.unpriced?.includes(completion.providerId))
    spend.unpriced = [...(spend.unpriced ?? []), completion.providerId];
  if (completion.batchSavedUsd !== undefined) {
    spend.batchCalls = (spend.batchCalls ?? 0) + 1;
    spend.batchSavedUsd = (spend.batchSavedUsd ?? 0) + completion.batchSavedUsd;
  }
  spend.usage.input += completion.usage.input;
  spend.usage.output += completion.usage.output;
  spend.usage.cached += completion.usage.cached;
}
