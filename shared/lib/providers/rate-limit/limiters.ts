/**
 * Rate limits as part of a backend: the declared requests and tokens per minute of a
 * provider+model, a token bucket that holds calls to them, and an adaptive ceiling on the calls
 * in flight (AIMD: halved on a 429, raised by one per window of successes) that also honours
 * the server's retry-after for every caller of that model, not only the one that got it.
 *
 * One {@link ModelLimiter} per provider+model per process (here); the bucket itself lives
 * behind the `RateLimitStore` port, in memory locally and in DynamoDB on AWS, so the whole
 * fleet of workers shares one budget. The concerns have a module each in this folder: `bucket`
 * (the token bucket), `lease` (a bucket sharded and leased by a fleet), `fleet` (one
 * container's leases), `fallback` (a local share while the store cannot answer),
 * `learned-limits` (vendors' headers), `spec` (ASSAY_LIMITS and `run.limits`), `aimd` (the
 * adaptive ceiling), `limiter` (one model's limiter).
 */
import { type BackendLimit, type RateLimit, rateOf } from '../../../model/limits.js';
import { Aimd } from './aimd.js';
import { stricter } from './bucket.js';
import { ModelLimiter, type ModelLimiterOptions } from './limiter.js';
import { Slots } from './slots.js';
import { declaredFor, parseLimitSpec, RateLimitSyntaxError } from './spec.js';

/**
 * The most worker containers a fleet has at once when the function is not told: the most
 * invocations an SQS event source runs at once. A store that cannot answer leaves each
 * container the limit divided by this.
 */
export const DEFAULT_FLEET_SIZE = 1_000;

/**
 * How many containers may share a fleet's buckets at once: `ASSAY_WORKER_MAX_CONCURRENCY` (the
 * worker function's maximum concurrency), else {@link DEFAULT_FLEET_SIZE}. Anything but a
 * positive whole number is a {@link RateLimitSyntaxError} naming the variable.
 */
export function fleetSizeOf(env: NodeJS.ProcessEnv): number {
  const text = env.ASSAY_WORKER_MAX_CONCURRENCY?.trim();
  if (!text) return DEFAULT_FLEET_SIZE;
  if (!/^\d+$/.test(text) || Number(text) < 1)
    throw new RateLimitSyntaxError(
      `ASSAY_WORKER_MAX_CONCURRENCY: "${text}" is not a positive whole number (the most worker containers at once)`,
    );
  return Number(text);
}

/**
 * The limiters of a process, one per provider+model, shared by every run and item that calls
 * the model. `env` limits (`ASSAY_LIMITS`) and a suite's `run.limits` both apply: per axis the
 * stricter one wins.
 */
export class RateLimiters {
  private readonly byId = new Map<string, ModelLimiter>();
  /** The slots of each key a suite declared a `concurrency` under, shared by the backends it names. */
  private readonly slotsByKey = new Map<string, Slots>();
  readonly declared: Record<string, RateLimit>;

  constructor(private readonly options: ModelLimiterOptions & { env?: NodeJS.ProcessEnv }) {
    const spec = options.env?.ASSAY_LIMITS;
    this.declared = spec ? parseLimitSpec(spec) : {};
  }

  /**
   * The limiter for `providerId` (resolved `vendor:model`) under the suite's own limits (by
   * resolved id or wildcard: an exact key wins). With `concurrency` (the calls the caller runs
   * at once), the window never drops below an eighth of it ({@link Aimd.floorFor}). A
   * `concurrency` the suite declares for the backend holds it to that many calls in flight,
   * together with every other backend its key names.
   */
  for(providerId: string, suiteLimits?: Map<string, BackendLimit>, concurrency?: number): ModelLimiter {
    const declared = suiteLimits === undefined ? undefined : declaredFor(suiteLimits, providerId);
    const fromSuite = declared?.value;
    let limiter = this.byId.get(providerId);
    if (!limiter) {
      limiter = new ModelLimiter(providerId, this.rateFor(providerId, fromSuite), this.options);
      limiter.suiteLimit = fromSuite;
      this.byId.set(providerId, limiter);
    } else if (limiter.suiteLimit !== fromSuite) {
      // Another suite (or none) now calls this model: its limits apply from here on.
      limiter.suiteLimit = fromSuite;
      limiter.limit = this.rateFor(providerId, fromSuite);
    }
    limiter.slots =
      fromSuite?.concurrency === undefined ? undefined : this.slotsOf(declared!.key, fromSuite.concurrency);
    if (concurrency !== undefined) limiter.aimd.min = Math.min(limiter.aimd.max, Aimd.floorFor(concurrency));
    return limiter;
  }

  /** The rate limits that hold a model: ASSAY_LIMITS' and the suite's, the stricter per axis. */
  private rateFor(providerId: string, fromSuite: BackendLimit | undefined): RateLimit | undefined {
    return stricter(declaredFor(this.declared, providerId)?.value, rateOf(fromSuite));
  }

  private slotsOf(key: string, size: number): Slots {
    let slots = this.slotsByKey.get(key);
    if (!slots) {
      slots = new Slots(size);
      this.slotsByKey.set(key, slots);
    } else if (slots.size !== size) slots.resize(size);
    return slots;
  }

  /** The slots a declared `concurrency` keeps under `key` (as written, resolved), if any was used. */
  slots(key: string): Slots | undefined {
    return this.slotsByKey.get(key);
  }

  /** Every limiter built so far. */
  all(): ModelLimiter[] {
    return [...this.byId.values()];
  }
}
