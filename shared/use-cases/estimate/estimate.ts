/**
 * `assay estimate`: what a run will call, spend and take, before anything is spent. The dataset
 * is read as a run reads it (same items, sample, invalid rows); each item goes through its
 * family's own `solve` and scorers with a context that records every request instead of sending
 * it, and answers with the family's simulator. So prompts are rendered exactly as the run will
 * render them, and the calls per item follow from the method: twice per item, once with every
 * answer agreeing with the gold and once with every answer disagreeing, which gives the fewest
 * and the most calls where the method's path depends on the answers (escalation, routing).
 */

import type { AnyTaskFamily, TaskContext } from '../../family/types.js';
import type { RawRow } from '../../lib/datasets/read.js';
import { SimEmbedder, SimNli } from '../../lib/encoders/sim.js';
import { textTable, usd } from '../../lib/format.js';
import { costOf, type PriceTable } from '../../lib/providers/pricing.js';
import { stricter } from '../../lib/providers/rate-limit/bucket.js';
import { declaredFor, parseLimitSpec, suiteLimitsById } from '../../lib/providers/rate-limit/spec.js';
import { seededRandom } from '../../lib/providers/sim.js';
import { type BackendLimit, rateOf } from '../../model/limits.js';
import type { Item, ItemMessage, ItemResult, RunRecord } from '../../model/model.js';
import type { Completion, CompletionRequest, LlmProvider } from '../../model/provider.js';
import { simulateAnswer, taskFor } from '../../registry/registry.js';
import { promptRenderer } from '../score-item.js';
import { type IngestRunStore, startRun } from '../start-run.js';
import { exactTokenizer, roughRequestTokens, roughTokens, type TokenCounter } from './tokens.js';

/** A figure that depends on the answers: its value on the cheapest and the dearest path. */
export interface Range {
  min: number;
  max: number;
}

export interface BackendEstimate {
  backend: string;
  calls: Range;
  inputTokens: Range;
  /**
   * Answers of the size the family's answers take (the simulator's), on the cheapest and on the
   * dearest path: what a typical run's answers add up to.
   */
  outputTokens: Range;
  /** The most the answers can take: `maxTokens` for every call of the dearest path. */
  maxOutputTokens: number;
  /**
   * A typical run's cost: the input tokens and typical answers of the cheapest and of the
   * dearest path. Null when the price table has no price for the backend (unknown, not 0).
   */
  costUsd: Range | null;
  /** The most the calls can cost: the dearest path with every answer at `maxTokens`. Null when unpriced. */
  ceilingUsd: number | null;
  /** True when o200k_base is the backend's own tokenizer; false: an approximation. */
  exactTokens: boolean;
  /** The declared limit (suite `run.limits` and ASSAY_LIMITS, the stricter), if any. */
  limit?: BackendLimit;
  /** Seconds the declared limit alone needs for these calls; null without a limit. */
  limitSeconds: Range | null;
}

export interface Estimate {
  suite: string;
  task: string;
  config: Record<string, string>;
  /** Items that will be scored (the sample, when the suite samples). */
  items: number;
  invalidRows: number;
  /** Times each item is scored (`run.repeats`): every model call of an item counted that many times. */
  repeats: number;
  concurrency: number;
  /** The time one call is assumed to take. */
  latencyMs: number;
  backends: BackendEstimate[];
  /** Sum over the backends; null when any backend is unpriced. */
  costUsd: Range | null;
  /** The most the run's calls can cost, summed over the backends; null when any backend is unpriced. */
  ceilingUsd: number | null;
  /** Projected wall time: the slower of the concurrency bound and each backend's limit. */
  wallSeconds: Range;
  /** What bounds the wall time on the dearest path: `concurrency` or a backend id. */
  boundBy: string;
  notes: string[];
}

export interface EstimateInput {
  /** A run record as `prepareRun` makes it (backends resolved, prompts snapshotted). */
  run: RunRecord;
  rows: AsyncIterable<RawRow>;
  prices: PriceTable;
  tokens: TokenCounter;
  /** ASSAY_LIMITS is read from here. */
  env?: NodeJS.ProcessEnv;
  /** Assumed time per call. Default 1,000 ms. */
  latencyMs?: number;
}

interface Tally {
  calls: number;
  input: number;
  /** Tokens of the simulated answers: the typical answer size. */
  typicalOutput: number;
  /** maxTokens of every call. */
  maxOutput: number;
  /** The input and the typical answers by the rough count (a token per four characters). */
  roughInput: number;
  roughOutput: number;
}

const emptyTally = (): Tally => ({
  calls: 0,
  input: 0,
  typicalOutput: 0,
  maxOutput: 0,
  roughInput: 0,
  roughOutput: 0,
});

/**
 * What the two dry runs of one item share: the token counts of the texts both send (the
 * answers differ, most prompts do not) and the encoders' answers (they depend on the texts
 * alone). Kept for one item, so memory stays flat however large the dataset.
 */
interface ItemMemo {
  tokens: Map<string, number>;
  requests: Map<string, { input: number; rough: number }>;
  encoded: Map<string, Promise<unknown>>;
}

const newMemo = (): ItemMemo => ({ tokens: new Map(), requests: new Map(), encoded: new Map() });

/** A backend as the estimate's families see it: an id. It is never called. */
function recordedBackend(id: string): LlmProvider {
  return {
    id,
    simulated: id.startsWith('sim:'),
    complete: () => Promise.reject(new Error(`assay estimate never calls ${id}`)),
  };
}

/**
 * One item through the family with every request recorded (tokens counted) and answered by the
 * simulator at `noise` (0: every answer agrees with the gold; 1: none does).
 */
async function dryRun(
  family: AnyTaskFamily,
  run: RunRecord,
  item: Item,
  backends: LlmProvider[],
  render: TaskContext['render'],
  tokens: TokenCounter,
  noise: number,
  memo: ItemMemo,
): Promise<Map<string, Tally>> {
  const tallies = new Map<string, Tally>();
  const { suite } = run;
  let n = 0;
  const countOnce = (text: string) => {
    let count = memo.tokens.get(text);
    if (count === undefined) {
      count = tokens.count(text);
      memo.tokens.set(text, count);
    }
    return count;
  };
  /** An encoder's answer to these texts: computed by the first dry run, reused by the second. */
  const once = <T>(key: string, compute: () => Promise<T>): Promise<T> => {
    let answer = memo.encoded.get(key) as Promise<T> | undefined;
    if (answer === undefined) {
      answer = compute();
      memo.encoded.set(key, answer);
    }
    return answer;
  };
  const ctx: TaskContext = {
    embed: async () => [],
    contradiction: async () => [],
    suite,
    prompts: run.prompts,
    paths: family.promptPaths(suite),
    backends,
    render,
    async call(stage: string, provider: LlmProvider, request: CompletionRequest): Promise<Completion> {
      const text = request.simulation
        ? simulateAnswer(request.simulation, seededRandom(`estimate|${item.id}|${stage}|${n++}`), noise)
        : '';
      const tally = tallies.get(provider.id) ?? emptyTally();
      tallies.set(provider.id, tally);
      const key = JSON.stringify([request.system, request.history, request.prompt, request.rawCompletion]);
      let sent = memo.requests.get(key);
      if (sent === undefined) {
        sent = { input: tokens.request(request), rough: roughRequestTokens(request) };
        memo.requests.set(key, sent);
      }
      const input = sent.input;
      const output = countOnce(text);
      // With run.repeats every model call of an item is made k times (encoders are not repeated).
      const k = suite.run.repeats ?? 1;
      tally.calls += k;
      tally.input += k * input;
      tally.typicalOutput += k * output;
      tally.maxOutput += k * (request.maxTokens ?? suite.params.maxTokens);
      tally.roughInput += k * sent.rough;
      tally.roughOutput += k * roughTokens(text);
      return {
        text,
        finishReason: 'stop',
        usage: { input, output, cached: 0 },
        costUsd: 0,
        latencyMs: 0,
        cached: false,
        simulated: true,
        providerId: provider.id,
      };
    },
  };
  /** An encoder call: its input tokens booked under the encoder's id, answered by the simulators. */
  const encoded = (id: string, texts: readonly string[]) => {
    const tally = tallies.get(id) ?? emptyTally();
    tallies.set(id, tally);
    tally.calls += 1;
    for (const text of texts) {
      tally.input += countOnce(text);
      tally.roughInput += roughTokens(text);
    }
  };
  ctx.embed = async (_stage, id, texts) => {
    encoded(id, texts);
    return once(`embed|${JSON.stringify(texts)}`, async () => (await new SimEmbedder().embed(texts)).vectors);
  };
  ctx.contradiction = async (_stage, id, pairs) => {
    const texts = pairs.flatMap((p) => [p.premise, p.hypothesis]);
    encoded(id, texts);
    return once(
      `nli|${JSON.stringify(texts)}`,
      async () => (await new SimNli().contradiction(pairs)).probabilities,
    );
  };
  const solved = item.given ? family.readOutput(item.given, item, suite) : await family.solve(item, ctx);
  if (solved.ok) {
    for (const scorer of Object.values(family.scorers(suite))) await scorer.score(solved.output, item, ctx);
  }
  return tallies;
}

/**
 * A run store that keeps only counts: `startRun` reads the dataset into it exactly as a run
 * would (sample, invalid rows, duplicates), and nothing is written anywhere.
 */
class CountingRunStore implements IngestRunStore {
  invalidRows = 0;
  async createRun(): Promise<void> {}
  async getRun(): Promise<RunRecord | undefined> {
    return undefined;
  }
  async closePart() {
    return { complete: false };
  }
  async recordResult(_result: ItemResult) {
    this.invalidRows += 1;
    return { recorded: true, complete: false };
  }
  async resultIds(): Promise<Set<string>> {
    return new Set();
  }
}

/** Reads the suite's dataset, dry-runs every item and adds up calls, tokens, cost and time. */
export async function estimateRun(input: EstimateInput): Promise<Estimate> {
  const { run, tokens, prices } = input;
  const { suite } = run;
  const latencyMs = input.latencyMs ?? 1_000;
  const family = taskFor(suite);
  const backends = suite.backends.map(recordedBackend);
  const render = promptRenderer(family, run);
  // Per backend, the fewer and the more of each figure over the two dry runs of each item.
  const cheap = new Map<string, Tally>();
  const dear = new Map<string, Tally>();
  const add = (into: Map<string, Tally>, id: string, t: Tally) => {
    const sum = into.get(id) ?? emptyTally();
    into.set(id, sum);
    sum.calls += t.calls;
    sum.input += t.input;
    sum.typicalOutput += t.typicalOutput;
    sum.maxOutput += t.maxOutput;
    sum.roughInput += t.roughInput;
    sum.roughOutput += t.roughOutput;
  };
  const pick = (a: Tally, b: Tally, by: (x: number, y: number) => number): Tally => ({
    calls: by(a.calls, b.calls),
    input: by(a.input, b.input),
    typicalOutput: by(a.typicalOutput, b.typicalOutput),
    maxOutput: by(a.maxOutput, b.maxOutput),
    roughInput: by(a.roughInput, b.roughInput),
    roughOutput: by(a.roughOutput, b.roughOutput),
  });
  let items = 0;

  const store = new CountingRunStore();
  const queue = {
    async sendItems(messages: ItemMessage[]) {
      for (const { item } of messages) {
        items += 1;
        const memo = newMemo();
        const agree = await dryRun(family, run, item, backends, render, tokens, 0, memo);
        const disagree = await dryRun(family, run, item, backends, render, tokens, 1, memo);
        for (const id of new Set([...agree.keys(), ...disagree.keys()])) {
          const a = agree.get(id) ?? emptyTally();
          const d = disagree.get(id) ?? emptyTally();
          add(cheap, id, pick(a, d, Math.min));
          add(dear, id, pick(a, d, Math.max));
        }
      }
    },
  };
  const trigger = { trigger: async () => {}, triggerSweep: async () => {} };
  await startRun({ runStore: store, queue, trigger }, { run, rows: input.rows });

  const declared = input.env?.ASSAY_LIMITS ? parseLimitSpec(input.env.ASSAY_LIMITS) : {};
  const suiteLimits = suiteLimitsById(suite.run);
  const ids = [...new Set([...suite.backends, ...cheap.keys(), ...dear.keys()])];
  const perBackend = ids.map((backend): BackendEstimate => {
    const lo = cheap.get(backend) ?? emptyTally();
    const hi = dear.get(backend) ?? emptyTally();
    // A typical run's cost spans both token counts: o200k_base, and the rough count a simulated
    // run books (which also stands in for the tokenizers o200k_base only approximates).
    const low = costOf(prices, backend, {
      input: Math.min(lo.input, lo.roughInput),
      output: Math.min(lo.typicalOutput, lo.roughOutput),
      cached: 0,
    });
    const high = costOf(prices, backend, {
      input: Math.max(hi.input, hi.roughInput),
      output: Math.max(hi.typicalOutput, hi.roughOutput),
      cached: 0,
    });
    const ceiling = costOf(prices, backend, {
      input: Math.max(hi.input, hi.roughInput),
      output: hi.maxOutput,
      cached: 0,
    });
    const fromSuite = declaredFor(suiteLimits, backend)?.value;
    const rate = stricter(declaredFor(declared, backend)?.value, rateOf(fromSuite));
    const limit: BackendLimit | undefined =
      fromSuite?.concurrency === undefined ? rate : { ...rate, concurrency: fromSuite.concurrency };
    const seconds = (t: Tally) => limitSeconds(limit!, t, latencyMs);
    return {
      backend,
      calls: { min: lo.calls, max: hi.calls },
      inputTokens: { min: lo.input, max: hi.input },
      outputTokens: { min: lo.typicalOutput, max: hi.typicalOutput },
      maxOutputTokens: hi.maxOutput,
      costUsd: low.priced ? { min: low.usd, max: high.usd } : null,
      ceilingUsd: ceiling.priced ? ceiling.usd : null,
      exactTokens: exactTokenizer(backend),
      ...(limit ? { limit } : {}),
      limitSeconds: limit ? { min: seconds(lo), max: seconds(hi) } : null,
    };
  });

  const concurrency = suite.run.concurrency;
  const poolSeconds = (pick: (b: BackendEstimate) => number) =>
    (perBackend.reduce((n, b) => n + pick(b), 0) * latencyMs) / 1000 / concurrency;
  const wall = { min: poolSeconds((b) => b.calls.min), max: poolSeconds((b) => b.calls.max) };
  let boundBy = 'concurrency';
  for (const b of perBackend) {
    if (!b.limitSeconds) continue;
    wall.min = Math.max(wall.min, b.limitSeconds.min);
    if (b.limitSeconds.max > wall.max) {
      wall.max = b.limitSeconds.max;
      boundBy = b.backend;
    }
  }
  const priced = perBackend.every((b) => b.costUsd !== null);
  const approximate = perBackend.filter((b) => !b.exactTokens).map((b) => b.backend);
  return {
    suite: suite.name,
    task: suite.task,
    config: family.config(suite),
    items,
    invalidRows: store.invalidRows,
    repeats: suite.run.repeats ?? 1,
    concurrency,
    latencyMs,
    backends: perBackend,
    costUsd: priced
      ? {
          min: perBackend.reduce((n, b) => n + b.costUsd!.min, 0),
          max: perBackend.reduce((n, b) => n + b.costUsd!.max, 0),
        }
      : null,
    ceilingUsd: priced ? perBackend.reduce((n, b) => n + b.ceilingUsd!, 0) : null,
    wallSeconds: wall,
    boundBy,
    notes: [
      'calls per item: the method run dry twice, with answers that all agree with the gold and that all disagree; each figure adds up the lower and the higher of the two per item; repair passes after an unparseable answer are not counted',
      'input tokens: o200k_base (js-tiktoken) with chat framing; structured-output schemas are not counted',
      "cost: a typical run, from the cheapest path to the dearest, each call's tokens counted both with o200k_base and as a token per four characters (how a simulated run books them and the budget reserves them, and a stand-in for tokenizers o200k_base only approximates); at most: every answer at maxTokens",
      'the LLM cache is not consulted: a call a run answers from it costs nothing, so a run repeating earlier calls costs less; a simulated run books its simulated embedders and NLI models at no cost',
      ...(approximate.length > 0
        ? [
            `${approximate.join(', ')}: counted with o200k_base as an approximation (their own tokenizers are not available offline, and their counts differ)`,
          ]
        : []),
      `output tokens: answers the size the family's answers take, on the cheapest and on the dearest path; at most maxTokens (${suite.params.maxTokens}) for every call`,
      `time: ${latencyMs} ms per call assumed (--latency-ms), items in flight: ${concurrency}, each item's calls one after another; a declared rate limit bounds its backend`,
    ],
  };
}

/**
 * Seconds the declared limit needs for these calls: requests at rpm, input + maxTokens at tpm,
 * and the calls `concurrency` at a time at the assumed latency (as if the backend had its slots
 * to itself: backends a wildcard's slots are shared by each count alone here).
 */
function limitSeconds(limit: BackendLimit, t: Tally, latencyMs: number): number {
  const byRequests = limit.rpm === undefined ? 0 : (t.calls / limit.rpm) * 60;
  const byTokens = limit.tpm === undefined ? 0 : ((t.input + t.maxOutput) / limit.tpm) * 60;
  const bySlots = limit.concurrency === undefined ? 0 : (t.calls * latencyMs) / 1000 / limit.concurrency;
  return Math.max(byRequests, byTokens, bySlots);
}

const count = (n: number) => Math.round(n).toLocaleString('en-US');
const range = (r: Range, show: (n: number) => string) =>
  show(r.min) === show(r.max) ? show(r.min) : `${show(r.min)}..${show(r.max)}`;

/** `42s`, `7m 05s`, `3h 12m`. */
export function duration(seconds: number): string {
  if (seconds < 60) return `${seconds < 10 ? seconds.toFixed(1) : Math.round(seconds)}s`;
  const m = Math.round(seconds / 60);
  if (seconds < 3600) {
    const whole = Math.floor(seconds / 60);
    return `${whole}m ${String(Math.round(seconds - whole * 60)).padStart(2, '0')}s`;
  }
  return `${Math.floor(m / 60)}h ${String(m % 60).padStart(2, '0')}m`;
}

const limitText = (limit: BackendLimit | undefined) =>
  limit
    ? [
        limit.rpm === undefined ? '' : `${count(limit.rpm)} rpm`,
        limit.tpm === undefined ? '' : `${count(limit.tpm)} tpm`,
        limit.concurrency === undefined ? '' : `${count(limit.concurrency)} in flight`,
      ]
        .filter(Boolean)
        .join(', ')
    : 'none declared';

/** The estimate for people: a table per backend, the totals, and what the figures assume. */
export function renderEstimate(e: Estimate): string {
  const config = Object.entries(e.config)
    .map(([k, v]) => `${k} ${v}`)
    .join(', ');
  const rows = e.backends.map((b) => [
    b.backend,
    range(b.calls, count),
    `${range(b.inputTokens, count)}${b.exactTokens ? '' : ' ~'}`,
    range(b.outputTokens, count),
    b.costUsd ? range(b.costUsd, usd) : 'n/a (no price)',
    limitText(b.limit),
    b.limitSeconds ? range(b.limitSeconds, duration) : '-',
  ]);
  const lines = [
    `estimate ${e.suite} (${e.task}${config ? `: ${config}` : ''}): ${count(e.items)} items, ${count(e.invalidRows)} invalid rows${e.repeats > 1 ? `, each scored ${e.repeats} times` : ''}`,
    '',
    ...textTable(
      ['backend', 'calls', 'input tokens', 'output tokens', 'cost', 'rate limit', 'time at limit'],
      rows,
    ),
    '',
    `cost: ${
      e.costUsd
        ? `${range(e.costUsd, usd)} (a typical run)${e.ceilingUsd === null ? '' : `; at most ${usd(e.ceilingUsd)} if every answer ran to maxTokens`}`
        : `n/a (no price for ${e.backends
            .filter((b) => !b.costUsd)
            .map((b) => b.backend)
            .join(', ')}; the priced backends' figures are above)`
    }`,
    `wall time: ${range(e.wallSeconds, duration)} (bound by ${e.boundBy === 'concurrency' ? `concurrency ${e.concurrency}` : `the rate limit of ${e.boundBy}`})`,
    '',
    ...e.notes.map((note) => `- ${note}`),
  ];
  if (e.backends.some((b) => !b.exactTokens)) lines.push('- ~: approximate token count');
  return `${lines.join('\n')}\n`;
}

/**
 * The line under a sweep's estimates: calls, tokens and cost added up over its variants (each
 * end of a range over the same end of each variant's). The cost is n/a when any variant's is.
 */
export function renderEstimateTotal(estimates: readonly Estimate[]): string {
  const sum = (pick: (b: BackendEstimate) => Range): Range =>
    estimates
      .flatMap((e) => e.backends)
      .reduce((t, b) => ({ min: t.min + pick(b).min, max: t.max + pick(b).max }), { min: 0, max: 0 });
  const unpriced = estimates.some((e) => e.costUsd === null);
  const cost = estimates.reduce(
    (t, e) => ({ min: t.min + (e.costUsd?.min ?? 0), max: t.max + (e.costUsd?.max ?? 0) }),
    { min: 0, max: 0 },
  );
  const ceiling = estimates.reduce((t, e) => t + (e.ceilingUsd ?? 0), 0);
  return `TOTAL (${estimates.length} variants): calls ${range(
    sum((b) => b.calls),
    count,
  )}, input tokens ${range(
    sum((b) => b.inputTokens),
    count,
  )}, output tokens ${range(
    sum((b) => b.outputTokens),
    count,
  )}, cost ${unpriced ? 'n/a (a variant has an unpriced backend)' : `${range(cost, usd)} (at most ${usd(ceiling)})`}\n`;
}
