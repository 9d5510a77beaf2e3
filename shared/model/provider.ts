/**
 * The one provider interface. Judges and graders see only these types, never a vendor SDK.
 * Ids are `vendor:model` (e.g. `openai:gpt-4o-mini`, `anthropic:claude-3-5-haiku-latest`,
 * `gemini:gemini-2.0-flash-lite`, `sim:gold`).
 */

export interface TokenUsage {
  input: number;
  output: number;
  /** Input tokens served from the provider's prompt cache (a subset of `input`). */
  cached: number;
  /**
   * Input tokens written to the provider's prompt cache for five minutes (a subset of `input`,
   * billed at the model's `cacheWrite5m` price). Anthropic only; absent when none.
   */
  cacheWrite5m?: number;
  /** Likewise for one-hour cache entries (billed at `cacheWrite1h`). Absent when none. */
  cacheWrite1h?: number;
  /**
   * Output tokens the model spent thinking before it answered (a subset of `output`, billed as
   * output), when the vendor says. Absent when none.
   */
  reasoning?: number;
}

export interface JsonSchemaSpec {
  /** A short identifier, `[a-zA-Z0-9_-]`, used by vendors that name their schemas. */
  name: string;
  /** A JSON Schema object (draft 2020-12 subset that all three vendors accept). */
  schema: Record<string, unknown>;
}

export interface CompletionRequest {
  /** Model part of the id (after `vendor:`), already resolved from aliases. */
  model: string;
  system?: string;
  /** The user turn. Multi-turn repair passes append to `messages`. */
  prompt: string;
  /** Earlier turns before `prompt` (used by the repair pass). */
  history?: { role: 'user' | 'assistant'; content: string }[];
  temperature?: number;
  maxTokens?: number;
  /** Ask for native structured output when the vendor has it. */
  jsonSchema?: JsonSchemaSpec;
  /**
   * `prompt` is already in the model's own instruction format (`[INST] … [/INST]`): send it as
   * is to a text-completion endpoint (`/v1/completions`, as vLLM serves) rather than wrapped in
   * a chat template. Vendors without that endpoint (Anthropic, Gemini) receive it as a chat turn.
   */
  rawCompletion?: boolean;
  /**
   * Only the simulator reads this: what the task family needs to fabricate a plausible answer
   * (the gold label, the answer shape…), as plain JSON, so a request stays serializable. Never
   * part of the cache key, never sent to a vendor.
   */
  simulation?: SimHint;
  /**
   * Which independent sample of the same call this is when a run scores each item several times
   * (`run.repeats`): 2, 3, … Absent for the first, so a run without repeats keeps its cache keys.
   * Part of the cache key and of the simulator's seed; never sent to a vendor.
   */
  sample?: number;
}

/** A family's description of the answer it expects, for the simulator (`family` names the family). */
export type SimHint = { family: string } & Record<string, unknown>;

/** Fabricates the text of a simulated answer from a hint and a seeded random source. */
export type Simulator = (hint: SimHint, rng: () => number, noise: number) => string;

export type FinishReason = 'stop' | 'length' | 'refusal' | 'content_filter' | 'other';

export interface Completion {
  text: string;
  finishReason: FinishReason;
  usage: TokenUsage;
  costUsd: number;
  /**
   * False when the price table has no price for the model: `costUsd` (0) is then not a figure
   * but unknown. Absent means priced (answers stored before this field existed were priced).
   */
  priced?: false;
  latencyMs: number;
  /** True when answered from the LLM cache (no provider call, no cost). */
  cached: boolean;
  /** On a cache hit: the cost of the call when it was first paid (the money the hit saved). */
  savedUsd?: number;
  /**
   * Answered by a vendor batch: what the batch discount took off the synchronous price
   * (`costUsd` is already the discounted price). See `batch.ts`.
   */
  batchSavedUsd?: number;
  /** In the cache: who paid for this answer (see `CallOptions.payer`). */
  paidBy?: string;
  /** True when the answer came from the simulator, never a real model. */
  simulated: boolean;
  /** `vendor:model` that produced it. */
  providerId: string;
  /**
   * The output budget ran out while the model was still thinking: no answer came back
   * (`finishReason` is `length`). Asking again with the same budget would end the same way, so
   * the answer is not repaired: the item fails as truncated.
   */
  thinkingExhausted?: boolean;
  /**
   * The rate limits the vendor reported on this answer's response headers, when it sent any
   * (OpenAI and Anthropic do on every answer; Gemini rarely). Never stored in the cache.
   */
  learnedLimits?: LearnedLimits;
}

/**
 * Rate limits as a vendor reports them on a response, one axis each for requests and tokens
 * (a minute's limit). `remaining` is what the vendor's bucket still holds and `resetMs` how long
 * until it is full again (both as of the response); either may be absent.
 */
export interface LearnedLimits {
  requests?: LearnedAxis;
  tokens?: LearnedAxis;
}

export interface LearnedAxis {
  /** The limit per minute. */
  limit: number;
  remaining?: number;
  /** Milliseconds until the vendor's bucket is full again. */
  resetMs?: number;
}

export interface LlmProvider {
  /** `vendor:model` */
  readonly id: string;
  readonly simulated: boolean;
  /**
   * Where the calls go when it is not the vendor's default endpoint (a base URL override:
   * `OPENAI_BASE_URL=http://localhost:8000/v1`, a vLLM server…); undefined for the default
   * endpoint. Part of the cache key, so an answer one server gave is never served for another.
   * A provider that wraps another passes the inner one's on.
   */
  readonly endpoint?: string;
  /** The vendor's batch API, when it has one (OpenAI, Anthropic, Gemini); the batch lane uses it. */
  readonly batch?: BatchApi;
  complete(request: CompletionRequest, signal?: AbortSignal): Promise<Completion>;
}

/** One request of a batch; `customId` comes back with its answer. */
export interface BatchEntry {
  customId: string;
  request: CompletionRequest;
}

/** What the vendor says about a submitted batch. */
export interface BatchStatus {
  /** The vendor's own word (`in_progress`, `ended`, `JOB_STATE_RUNNING`…), for progress lines. */
  status: string;
  /** No more answers will come: collect what there is. */
  done: boolean;
  /** Requests answered so far (succeeded or failed), when the vendor says. */
  finished?: number;
  total?: number;
}

/** One request's outcome: an answer, or why the batch could not answer it (it then goes to the sync lane). */
export type BatchOutcome =
  | { customId: string; ok: true; completion: Completion }
  | { customId: string; ok: false; error: string };

export interface BatchApi {
  /** Most requests one batch may hold (the vendor's limit, or less to keep inline bodies small). */
  readonly maxRequests: number;
  /**
   * Most bytes one batch's submission may carry, when the vendor limits it (Anthropic: 256 MB);
   * `bytesOf` measures one entry as it is sent. Batches are packed with `packBatches` (batch.ts).
   */
  readonly maxBytes?: number;
  bytesOf?(entry: BatchEntry): number;
  /** False for requests this vendor's batch endpoint cannot take (they go to the sync lane). */
  accepts(request: CompletionRequest): boolean;
  /** Submits the entries (all for one model) as one batch; returns the vendor's batch id. */
  submit(entries: readonly BatchEntry[], label: string): Promise<string>;
  status(batchId: string): Promise<BatchStatus>;
  /**
   * The outcomes of a finished batch. `entries` are what was submitted (answers are parsed
   * against their requests); an entry without an outcome here was not answered (expired,
   * cancelled) and goes to the sync lane like a failed one.
   */
  results(batchId: string, entries: readonly BatchEntry[]): Promise<BatchOutcome[]>;
}
