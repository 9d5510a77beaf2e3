/**
 * The LLM of the capacity model: a stand-in vendor in front of the simulator. The simulator
 * (`sim:` backends) answers at once and, being no vendor, skips the LLM cache and the fleet's
 * rate limiter; a real run does neither. While the model runs, each `sim:` provider the
 * functions' provider pools build is wrapped in a {@link StandInVendor}: it says it is no
 * simulator, so the worker's calls go through the real cache (a get and a put in the table per
 * call) and the real limiter (the buckets and learned limits it keeps in the table), and it
 * answers as a vendor would:
 *
 * - after a latency drawn from a lognormal distribution (the median given, p99 five times it);
 * - with the rate limits a vendor reports on every answer (OpenAI's headers), which the
 *   limiter learns and shares;
 * - with a burst of 429s (a share of the calls in a window of the scoring refused, with a
 *   retry-after) for the retries and the limiter to absorb; the window is timed from the run's
 *   first call, so that it falls on the scoring however long ingest takes to hand items on.
 *
 * The answers themselves are the simulator's (and marked simulated, so the report says so).
 */

import { ProviderPool } from '../../../shared/lib/providers/registry.js';
import { defaultSleep } from '../../../shared/lib/providers/retry.js';
import { seededRandom } from '../../../shared/lib/providers/sim.js';
import { ProviderError } from '../../../shared/model/errors.js';
import type { Completion, CompletionRequest, LlmProvider } from '../../../shared/model/provider.js';

/** z of the 99th percentile of a normal distribution. */
const Z99 = 2.3263;

export interface LlmBehaviour {
  /** The median latency of a call, ms. */
  medianMs: number;
  /** p99 / median of the latency. Default 5. */
  tailRatio?: number;
  /** A window of the scoring (ms from the run's first call) in which a share of the calls get a 429; none when absent. */
  burst?: { fromMs: number; forMs: number; share: number; retryAfterMs: number };
  /** The limits the vendor reports on each answer (requests and tokens a minute). */
  reported?: { rpm: number; tpm: number };
  /** Grows each answer to about this many bytes (a workload with large results); default as simulated. */
  answerBytes?: number;
  seed: number;
}

/** What the stand-in saw: calls answered, 429s given. */
export interface LlmTally {
  calls: number;
  refused: number;
  /** The latencies drawn, ms (for the report's percentiles). */
  latenciesMs: number[];
  /** Simulated ms since the upload of the first call (the burst's window starts from it). */
  firstCallMs?: number;
}

/** The lognormal σ that puts the 99th percentile at `tailRatio` × the median. */
export function sigmaFor(tailRatio: number): number {
  return Math.log(tailRatio) / Z99;
}

/** A lognormal draw with the median and σ given, from two uniforms (Box–Muller). */
export function lognormal(medianMs: number, sigma: number, u1: number, u2: number): number {
  const z = Math.sqrt(-2 * Math.log(Math.max(u1, 1e-12))) * Math.cos(2 * Math.PI * u2);
  return medianMs * Math.exp(sigma * z);
}

export class StandInVendor implements LlmProvider {
  readonly id: string;
  readonly simulated = false;
  private readonly sigma: number;
  private readonly drawn = new Map<string, number>();

  constructor(
    private readonly inner: LlmProvider,
    private readonly behaviour: LlmBehaviour,
    private readonly tally: LlmTally,
    /** Simulated ms since the upload. */
    private readonly sinceUpload: () => number,
  ) {
    this.id = inner.id;
    this.sigma = sigmaFor(behaviour.tailRatio ?? 5);
  }

  async complete(request: CompletionRequest, signal?: AbortSignal): Promise<Completion> {
    // Each attempt at the same request draws anew, the same way on every run.
    const key = JSON.stringify([this.behaviour.seed, request.simulation ?? request.prompt, request.sample]);
    const attempt = (this.drawn.get(key) ?? 0) + 1;
    this.drawn.set(key, attempt);
    const random = seededRandom(`${key}#${attempt}`);
    const burst = this.behaviour.burst;
    // Calls before the upload (none is refused) do not start the window.
    const since = this.sinceUpload();
    if (since >= 0) this.tally.firstCallMs ??= since;
    const at = since - (this.tally.firstCallMs ?? Number.POSITIVE_INFINITY);
    if (burst && at >= burst.fromMs && at < burst.fromMs + burst.forMs && random() < burst.share) {
      this.tally.refused += 1;
      await defaultSleep(Math.min(50, this.behaviour.medianMs), signal);
      throw new ProviderError(
        'Rate limit reached for requests (429)',
        'rate_limit',
        this.id,
        429,
        burst.retryAfterMs,
      );
    }
    const latencyMs = lognormal(this.behaviour.medianMs, this.sigma, random(), random());
    this.tally.calls += 1;
    this.tally.latenciesMs.push(latencyMs);
    await defaultSleep(latencyMs, signal);
    const completion = await this.inner.complete(request, signal);
    const reported = this.behaviour.reported;
    return {
      ...completion,
      text: padded(completion.text, this.behaviour.answerBytes ?? 0),
      latencyMs,
      ...(reported
        ? { learnedLimits: { requests: { limit: reported.rpm }, tokens: { limit: reported.tpm } } }
        : {}),
    };
  }
}

/**
 * The answer grown to `bytes`: a JSON answer's reason (which the result keeps), else its
 * longest string field, lengthened with words; any other answer with words after it.
 */
export function padded(text: string, bytes: number): string {
  const missing = bytes - Buffer.byteLength(text);
  if (missing <= 0) return text;
  const words = (n: number) => ' lorem'.repeat(Math.ceil(n / 6)).slice(0, n);
  let answer: unknown;
  try {
    answer = JSON.parse(text);
  } catch {
    return `${text}${words(missing)}`;
  }
  if (typeof answer !== 'object' || answer === null || Array.isArray(answer))
    return `${text}${words(missing)}`;
  const fields = answer as Record<string, unknown>;
  const strings = Object.keys(fields).filter((k) => typeof fields[k] === 'string');
  const longest = strings.includes('reason')
    ? 'reason'
    : strings.sort((a, b) => (fields[b] as string).length - (fields[a] as string).length)[0];
  if (longest === undefined) return `${text}${words(missing)}`;
  return JSON.stringify({ ...fields, [longest]: `${fields[longest] as string}${words(missing)}` });
}

/**
 * Wraps every `sim:` provider the provider pools build from now on in a stand-in vendor, until
 * the returned function puts `ProviderPool.prototype.get` back.
 */
export function standInVendors(
  behaviour: LlmBehaviour,
  sinceUpload: () => number,
): { tally: LlmTally; restore: () => void } {
  const tally: LlmTally = { calls: 0, refused: 0, latenciesMs: [] };
  const original = Object.getOwnPropertyDescriptor(ProviderPool.prototype, 'get')!;
  const get = original.value as ProviderPool['get'];
  const wrapped = new WeakMap<LlmProvider, StandInVendor>();
  ProviderPool.prototype.get = function (this: ProviderPool, ...args: Parameters<ProviderPool['get']>) {
    const provider = get.apply(this, args);
    if (!provider.simulated || !provider.id.startsWith('sim:')) return provider;
    let vendor = wrapped.get(provider);
    if (!vendor) {
      vendor = new StandInVendor(provider, behaviour, tally, sinceUpload);
      wrapped.set(provider, vendor);
    }
    return vendor;
  };
  return { tally, restore: () => Object.defineProperty(ProviderPool.prototype, 'get', original) };
}
