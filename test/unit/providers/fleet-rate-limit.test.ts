/**
 * A fleet of 1,000 worker containers sharing one declared limit, on a simulated clock: each
 * container its own `RateLimiters` and `DynamoRateLimitStore` (the real adapter), all over one
 * in-memory table that meters every item per simulated second as DynamoDB does (1,000 write
 * and 3,000 read units a second per partition key, refused above that with DynamoDB's own
 * error) and takes a few milliseconds per request, so conditional writes race as they do on
 * AWS. Each container runs 10 to 50 calls at once to a model that answers in one second, far
 * more than the limit allows: the fleet must hold the limit in every minute, use at least 90%
 * of it, and keep every item well inside DynamoDB's limits; with the table failing or
 * throttled, it must keep to the containers' local shares and say so.
 */
import {
  ConditionalCheckFailedException,
  ProvisionedThroughputExceededException,
} from '@aws-sdk/client-dynamodb';
import { type DynamoDBDocumentClient, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { DynamoRateLimitStore } from '../../../shared/adapters/aws/dynamo-rate-limit-store.js';
import { estimateCallTokens } from '../../../shared/lib/providers/rate-limit/bucket.js';
import type { StoreFallbackEvent } from '../../../shared/lib/providers/rate-limit/fallback.js';
import { shardsFor } from '../../../shared/lib/providers/rate-limit/lease.js';
import { RateLimiters } from '../../../shared/lib/providers/rate-limit/limiters.js';
import type { Completion, CompletionRequest } from '../../../shared/model/provider.js';
import { SimClock } from '../../fakes/sim-clock.js';

/** A seeded uniform draw in [0, 1): every run of a scenario is the same run. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

interface Meter {
  reads: number;
  writes: number;
}

/**
 * One DynamoDB table in memory, for the two commands the store sends: a consistent GetItem and
 * a PutItem conditional on `version` (or on the item not existing). Each request takes 2–5 ms
 * each way; it is served (and metered) in between.
 */
class MeteredTable {
  private readonly items = new Map<string, Record<string, unknown>>();
  /** Requests served, per item and per simulated second. */
  readonly served = new Map<string, Map<number, Meter>>();
  /** Requests refused for capacity (DynamoDB's throttling). */
  throttled = 0;
  /** Set by a scenario: an error every request at `now` meets (an outage), if any. */
  fault: ((now: number) => Error | undefined) | undefined;

  constructor(
    private readonly clock: SimClock,
    private readonly random: () => number,
    private readonly capacity: Meter = { reads: 3_000, writes: 1_000 },
  ) {}

  readonly client = {
    send: (command: unknown) => this.send(command),
  } as unknown as DynamoDBDocumentClient;

  private async send(command: unknown): Promise<unknown> {
    await this.clock.sleep(2 + Math.floor(this.random() * 4));
    let outcome: { value: unknown } | { error: unknown };
    try {
      outcome = { value: this.serve(command) };
    } catch (error) {
      outcome = { error };
    }
    await this.clock.sleep(2 + Math.floor(this.random() * 4));
    if ('error' in outcome) throw outcome.error;
    return outcome.value;
  }

  private serve(command: unknown): unknown {
    const now = this.clock.now();
    const fault = this.fault?.(now);
    if (fault) throw fault;
    if (command instanceof GetCommand) {
      const id = itemId(command.input.Key!);
      this.meter(id, 'reads', now);
      const item = this.items.get(id);
      return { Item: item && structuredClone(item) };
    }
    if (command instanceof PutCommand) {
      const input = command.input;
      const id = itemId(input.Item!);
      // A refused condition still spends a write unit.
      this.meter(id, 'writes', now);
      const current = this.items.get(id);
      const holds =
        input.ConditionExpression === 'attribute_not_exists(pk)'
          ? current === undefined
          : current !== undefined && current.version === input.ExpressionAttributeValues?.[':version'];
      if (!holds)
        throw new ConditionalCheckFailedException({
          message: 'The conditional request failed',
          $metadata: {},
        });
      this.items.set(id, structuredClone(input.Item!));
      return {};
    }
    throw new Error(`the table fake does not serve ${String(command)}`);
  }

  private meter(id: string, kind: keyof Meter, now: number): void {
    const seconds = this.served.get(id) ?? new Map<number, Meter>();
    this.served.set(id, seconds);
    const second = Math.floor(now / 1_000);
    const meter = seconds.get(second) ?? { reads: 0, writes: 0 };
    seconds.set(second, meter);
    if (meter[kind] >= this.capacity[kind]) {
      this.throttled += 1;
      throw new ProvisionedThroughputExceededException({
        message: 'The level of configured provisioned throughput for the table was exceeded',
        $metadata: {},
      });
    }
    meter[kind] += 1;
  }

  /** The most reads and the most writes one item served in one second. */
  busiest(): Meter {
    const most = { reads: 0, writes: 0 };
    for (const seconds of this.served.values())
      for (const meter of seconds.values()) {
        most.reads = Math.max(most.reads, meter.reads);
        most.writes = Math.max(most.writes, meter.writes);
      }
    return most;
  }

  /** Reads and writes served, in all and from second `since` (epoch seconds) on. */
  totals(since: number): { all: number; since: number } {
    const out = { all: 0, since: 0 };
    for (const seconds of this.served.values())
      for (const [second, meter] of seconds) {
        out.all += meter.reads + meter.writes;
        if (second >= since) out.since += meter.reads + meter.writes;
      }
    return out;
  }
}

const itemId = (key: Record<string, unknown>) => `${String(key.pk)}|${String(key.sk)}`;

const MODEL = 'openai:gpt-4o-mini';
/** Simulated epoch time at the start (the fallback retries at multiples of 10 s of it). */
const EPOCH = 1_800_000_000_000;
const CONTAINERS = 1_000;

interface Scenario {
  rpm: number;
  tpm: number;
  seconds: number;
  /** An error every request meets at `at` (ms into the run), if any; `draw` is the run's random source. */
  fault?: (at: number, draw: () => number) => Error | undefined;
}

interface Figures {
  calls: number;
  /** Calls and tokens in the busiest 60 s window, and in the quietest whole window starting on a second. */
  mostPerMinute: number;
  fewestPerMinute: number;
  mostTokensPerMinute: number;
  fewestTokensPerMinute: number;
  /** The quietest whole 60 s window starting at or after `from` seconds. */
  fewestPerMinuteFrom: (from: number) => number;
  /** Calls in the busiest second. */
  mostPerSecond: number;
  /** The busiest item's busiest second, and DynamoDB's refusals (none if its limits are never reached). */
  busiest: Meter;
  throttled: number;
  /** Reads and writes of all items per call, over the last minute (the fleet settled) and over the run. */
  storeCallsPerCall: { lastMinute: number; run: number };
  fallbacks: StoreFallbackEvent[];
  recovered: number;
}

/** A fleet of {@link CONTAINERS} containers, each calling with 10 to 50 calls at once for the scenario's length. */
async function runFleet(scenario: Scenario): Promise<Figures> {
  const clock = new SimClock(EPOCH);
  const random = seeded(scenario.rpm + scenario.tpm + (scenario.fault ? 1 : 0));
  const table = new MeteredTable(clock, random);
  const { fault } = scenario;
  if (fault) table.fault = (now) => fault(now - EPOCH, random);
  const end = EPOCH + scenario.seconds * 1_000;
  const sentAt: number[] = [];
  const sentTokens: number[] = [];
  const fallbacks: StoreFallbackEvent[] = [];
  let recovered = 0;
  const answer: Completion = {
    text: 'ok',
    finishReason: 'stop',
    usage: { input: 10, output: 2, cached: 0 },
    costUsd: 0,
    latencyMs: 1_000,
    cached: false,
    simulated: false,
    providerId: MODEL,
  };
  for (let container = 0; container < CONTAINERS; container++) {
    const lanes = 10 + ((container * 7) % 41);
    const limiter = new RateLimiters({
      store: new DynamoRateLimitStore({ client: table.client, tableName: 'assay', now: clock.now, random }),
      env: { ASSAY_LIMITS: `${MODEL}=${scenario.rpm}rpm,${scenario.tpm}tpm` },
      fleetSize: CONTAINERS,
      now: clock.now,
      sleep: clock.sleep,
      timers: clock,
      random,
      onStoreFallback: (event) => fallbacks.push(event),
      onStoreRecovered: () => {
        recovered += 1;
      },
    }).for(MODEL, undefined, lanes);
    for (let lane = 0; lane < lanes; lane++) {
      void (async () => {
        while (clock.now() < end) {
          // 200 to 600 estimated tokens a call.
          const request: CompletionRequest = {
            model: 'gpt-4o-mini',
            prompt: 'x'.repeat(200 + Math.floor(random() * 1_600)),
            maxTokens: 150,
          };
          await limiter.run(request, async () => {
            sentAt.push(clock.now());
            sentTokens.push(estimateCallTokens(request));
            await clock.sleep(1_000);
            return answer;
          });
        }
      })();
    }
  }
  await clock.runUntil(clock.sleep(scenario.seconds * 1_000));

  // Calls were sent in time order: sliding windows over them.
  const most = (spanMs: number, weight: (i: number) => number) => {
    let best = 0;
    let sum = 0;
    for (let i = 0, j = 0; i < sentAt.length; i++) {
      sum += weight(i);
      while (sentAt[i]! - sentAt[j]! >= spanMs) sum -= weight(j++);
      best = Math.max(best, sum);
    }
    return best;
  };
  const fewest = (weight: (i: number) => number, fromSeconds = 0) => {
    let least = Number.POSITIVE_INFINITY;
    for (let start = EPOCH + fromSeconds * 1_000; start + 60_000 <= end; start += 1_000) {
      let sum = 0;
      for (let i = lowerBound(sentAt, start); i < sentAt.length && sentAt[i]! < start + 60_000; i++)
        sum += weight(i);
      least = Math.min(least, sum);
    }
    return least;
  };
  const calls = () => 1;
  const tokens = (i: number) => sentTokens[i]!;
  const lastMinute = Math.floor(end / 1_000) - 60;
  const store = table.totals(lastMinute);
  const callsInLastMinute = sentAt.length - lowerBound(sentAt, lastMinute * 1_000);
  return {
    calls: sentAt.length,
    mostPerMinute: most(60_000, calls),
    fewestPerMinute: fewest(calls),
    mostTokensPerMinute: most(60_000, tokens),
    fewestTokensPerMinute: fewest(tokens),
    fewestPerMinuteFrom: (from) => fewest(calls, from),
    mostPerSecond: most(1_000, calls),
    busiest: table.busiest(),
    throttled: table.throttled,
    storeCallsPerCall: {
      lastMinute: store.since / callsInLastMinute,
      run: store.all / sentAt.length,
    },
    fallbacks,
    recovered,
  };
}

function lowerBound(sorted: number[], value: number): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (sorted[mid]! < value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** What this test proves of every fleet, failing store or not: the limit held in every minute, and DynamoDB never pushed. */
function expectLimitHeld(figures: Figures, { rpm, tpm }: Scenario): void {
  expect(figures.mostPerMinute).toBeLessThanOrEqual(rpm);
  expect(figures.mostTokensPerMinute).toBeLessThanOrEqual(tpm);
  expect(figures.busiest.writes).toBeLessThan(1_000);
  expect(figures.busiest.reads).toBeLessThan(3_000);
  expect(figures.throttled).toBe(0);
}

describe('a fleet of 1,000 containers sharing one declared limit (simulated clock)', {
  timeout: 300_000,
}, () => {
  it.each([
    // Long enough at 3,000 RPM for the turned-away crowd to settle into its rhythm.
    { rpm: 3_000, tpm: 3_000_000, seconds: 600 },
    { rpm: 30_000, tpm: 30_000_000, seconds: 240 },
  ])(
    '$rpm RPM: at most the limit in every minute and second, at least 0.9 of it, a fraction of a store call per call',
    async (scenario) => {
      const figures = await runFleet(scenario);
      expectLimitHeld(figures, scenario);
      expect(figures.fewestPerMinute).toBeGreaterThanOrEqual(0.9 * scenario.rpm);
      // By the second: the limit's rate plus the buckets' burst (about one request per shard).
      expect(figures.mostPerSecond).toBeLessThanOrEqual(scenario.rpm / 60 + shardsFor(scenario));
      // Today's bucket costs a read and a write per call (more with lost races).
      expect(figures.storeCallsPerCall.lastMinute).toBeLessThan(0.5);
      expect(figures.fallbacks).toEqual([]);
    },
  );

  it('30,000 RPM with tokens the tighter limit: at most the TPM in every minute, at least 0.9 of it', async () => {
    const scenario = { rpm: 30_000, tpm: 6_000_000, seconds: 180 };
    const figures = await runFleet(scenario);
    expectLimitHeld(figures, scenario);
    expect(figures.fewestTokensPerMinute).toBeGreaterThanOrEqual(0.9 * scenario.tpm);
    expect(figures.mostPerMinute).toBeLessThan(0.9 * scenario.rpm);
  });

  it.each([
    {
      rpm: 3_000,
      tpm: 3_000_000,
      failure: 'every request fails',
      fault: () => new Error('connect ECONNREFUSED'),
    },
    {
      rpm: 30_000,
      tpm: 30_000_000,
      failure: 'DynamoDB throttles every request',
      fault: () =>
        new ProvisionedThroughputExceededException({
          message: 'Throughput exceeds the limit',
          $metadata: {},
        }),
    },
  ])(
    '$rpm RPM, $failure for 90 s: local shares within the limit, said once per container, back on the bucket after',
    async ({ rpm, tpm, fault }) => {
      const scenario: Scenario = {
        rpm,
        tpm,
        seconds: 240,
        fault: (at) => (at >= 60_000 && at < 150_000 ? fault() : undefined),
      };
      const figures = await runFleet(scenario);
      expectLimitHeld(figures, scenario);
      // Each container fell back once (not once per call), to its share, and came back.
      expect(figures.fallbacks).toHaveLength(CONTAINERS);
      expect(new Set(figures.fallbacks.map((event) => JSON.stringify(event.share)))).toEqual(
        new Set([JSON.stringify({ rpm: rpm / CONTAINERS, tpm: tpm / CONTAINERS })]),
      );
      expect(figures.recovered).toBe(CONTAINERS);
      // The minutes after the store is back are the bucket's again.
      expect(figures.fewestPerMinuteFrom(160)).toBeGreaterThanOrEqual(0.9 * rpm);
    },
  );

  it('3,000 RPM, DynamoDB throttling 30% of requests at random for 90 s: the few that fall back do not push the fleet over', async () => {
    const scenario: Scenario = {
      rpm: 3_000,
      tpm: 3_000_000,
      seconds: 240,
      fault: (at, draw) =>
        at >= 60_000 && at < 150_000 && draw() < 0.3
          ? new ProvisionedThroughputExceededException({
              message: 'Throughput exceeds the limit',
              $metadata: {},
            })
          : undefined,
    };
    const figures = await runFleet(scenario);
    expectLimitHeld(figures, scenario);
    expect(figures.fewestPerMinute).toBeGreaterThanOrEqual(0.9 * scenario.rpm);
    expect(figures.fallbacks.length).toBeLessThan(0.05 * CONTAINERS);
  });
});
