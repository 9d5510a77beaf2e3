import type { AggregateTrigger, LlmCache, RecordOutcome, RunStore } from '../ports.js';
import { callModel } from '../providers/call.js';
import { ProviderError } from '../providers/errors.js';
import type { Completion, CompletionRequest, LlmProvider } from '../providers/types.js';
import { taskFor } from '../tasks/registry.js';
import type { ScoreOutcome } from '../tasks/types.js';
import type { ItemMessage, ItemResult, RunRecord, StageSpend } from './model.js';
import { isComplete } from './start-run.js';

export interface ScoreItemDeps {
  runStore: RunStore;
  trigger: AggregateTrigger;
  cache?: LlmCache;
  /** Builds (or returns the already built) provider for a backend id of a run. */
  providerFor(backend: string, run: RunRecord): LlmProvider;
  /** Attempts per model call for retryable errors. Default: the suite's `run.maxAttempts`. */
  maxAttempts?: number;
  /**
   * What a retryable provider error that outlived its attempts does: `throw` hands the item
   * back to the queue (AWS: SQS redelivers it later), `fail` records a failed result (local).
   */
  onTransientError: 'throw' | 'fail';
  /** Called after each model call, e.g. to feed a live cost counter. */
  onCall?: (completion: Completion) => void;
  now?: () => Date;
}

/** Runs are immutable once started: cache their records per process (per Lambda container). */
const runCache = new WeakMap<RunStore, Map<string, RunRecord>>();

async function loadRun(store: RunStore, runId: string): Promise<RunRecord> {
  let byId = runCache.get(store);
  if (!byId) {
    byId = new Map();
    runCache.set(store, byId);
  }
  const cached = byId.get(runId);
  if (cached) return cached;
  const run = await store.getRun(runId);
  if (!run) throw new Error(`run ${runId} not found`);
  byId.set(runId, run);
  return run;
}

/**
 * Scores one item and records exactly one result for it. A redelivered message records
 * nothing new (the store's conditional write) but still checks completion, so a crash
 * between recording and triggering cannot strand a run.
 */
export async function scoreItem(
  deps: ScoreItemDeps,
  message: ItemMessage,
): Promise<{ result: ItemResult; outcome: RecordOutcome }> {
  const run = await loadRun(deps.runStore, message.runId);
  const { item } = message;
  const task = taskFor(run.suite);
  const stages: Record<string, StageSpend> = {};
  let simulated = false;
  const maxAttempts = deps.maxAttempts ?? run.suite.run.maxAttempts;
  const cache = run.suite.run.cache ? deps.cache : undefined;

  const call = async (stage: string, provider: LlmProvider, request: CompletionRequest) => {
    const completion = await callModel(provider, request, {
      cache,
      maxAttempts,
      payer: `${run.runId}/${item.id}`,
    });
    bookSpend(stages, stage, completion);
    simulated ||= completion.simulated;
    deps.onCall?.(completion);
    return completion;
  };

  let outcome: ScoreOutcome;
  try {
    const backends = run.suite.backends.map((backend) => deps.providerFor(backend, run));
    outcome = await task.score(item, { suite: run.suite, prompts: run.prompts, backends, call });
  } catch (error) {
    if (error instanceof ProviderError && error.retryable && deps.onTransientError === 'throw') throw error;
    outcome = {
      status: 'failed',
      failure: {
        kind: error instanceof ProviderError ? 'provider' : 'internal',
        message: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
      },
    };
  }

  const result: ItemResult = {
    runId: run.runId,
    itemId: item.id,
    row: item.row,
    status: outcome.status,
    gold: item.gold,
    input: item.input,
    stages,
    prompts: Object.fromEntries(Object.entries(run.prompts).map(([path, p]) => [path, p.hash])),
    simulated: simulated || run.simulated,
    finishedAt: (deps.now ?? (() => new Date()))().toISOString(),
    ...(outcome.details ? { details: outcome.details } : {}),
    ...(outcome.status === 'scored'
      ? { prediction: outcome.prediction, reason: outcome.reason, score: outcome.score }
      : { prediction: 'Error', failure: outcome.failure, reason: outcome.failure.message, raw: outcome.raw }),
  };
  const recorded = await deps.runStore.recordResult(result);
  if (isComplete(recorded.counters)) await deps.trigger.trigger(run.runId);
  return { result, outcome: recorded };
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
  spend.usage.input += completion.usage.input;
  spend.usage.output += completion.usage.output;
  spend.usage.cached += completion.usage.cached;
}
