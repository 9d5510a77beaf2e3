import { describe, expect, it } from 'vitest';
import {
  batchSeconds,
  deploymentNeeds,
  RRU_PER_ITEM,
  renderDeploymentNeeds,
  WRU_PER_ITEM,
  workerConcurrency,
} from '../../../infra/capacity.js';
import { type AssayConfig, DEFAULT_CONFIG } from '../../../infra/config.js';

// Every expected figure below is worked out by hand from the settings and the constants.
describe('deploymentNeeds', () => {
  it('states the per-item units the capacity model checks', () => {
    expect([WRU_PER_ITEM, RRU_PER_ITEM]).toEqual([4, 2]);
  });

  it('times a batch by its slowest call: lognormal, 1 s median, 5 s at the 99th percentile', () => {
    // σ = ln 5 / z(0.99) = 1.60944 / 2.32635 = 0.69183. A batch of n ends at the expected
    // largest of n: z((n − 0.375) / (n + 0.25)), Blom's approximation.
    expect(batchSeconds(1)).toBe(1);
    // n = 20: z(0.969136) = 1.8676, e^(0.69183 × 1.8676) = 3.64 s.
    expect(batchSeconds(20)).toBeCloseTo(3.64, 2);
    // n = 100: z(0.993766) = 2.4988, e^(0.69183 × 2.4988) = 5.63 s.
    expect(batchSeconds(100)).toBeCloseTo(5.63, 2);
  });

  describe('at the defaults', () => {
    const needs = deploymentNeeds(DEFAULT_CONFIG);

    it('fits the account: 450 workers, 20 + 20 reserved, 2 × 2 dead-letter, 5 batch polls and 1 watchdog overlapping', () => {
      expect(needs.concurrency).toEqual({
        // The dead-letter function drains two queues (items' and events'), up to 2 each; the
        // batch poller runs every minute for up to 300 s, the watchdog every 5 for up to 120 s.
        byFunction: { worker: 450, ingest: 20, aggregate: 20, deadLetter: 4, batchPoller: 5, watchdog: 1 },
        total: 500,
        reserved: 40,
        quota: 1_000,
        fits: true,
      });
    });

    // A batch of 100 takes B = 5.633 s: 450 × 100 / B = 7,989 items/s.
    const B = batchSeconds(100);
    const ceiling = 45_000 / B;

    it('sets the ceiling by the workers: 450 × 100 / 5.63 s = 7,989 items/s, at 80 % of the write quota', () => {
      expect(needs.fleet).toEqual({
        mode: 'standard',
        workers: 450,
        batchSize: 100,
        batchSeconds: B,
        itemsPerSecond: ceiling,
        // From 5 concurrent batches, 300 more a minute, to the 450 the ceiling takes: 445 / 300 min.
        rampSeconds: 89,
      });
      expect(Math.round(ceiling)).toBe(7_989);
      expect(needs.ceilingItemsPerSecond).toBe(ceiling);
      expect(needs.limitedBy).toBe('workers');
      expect(needs.table).toEqual({
        quota: { read: 40_000, write: 40_000 },
        // 40,000 WRU/s / 4 = 10,000; 40,000 RRU/s / 2 = 20,000.
        itemsPerSecond: 10_000,
        atCeiling: { read: 2 * ceiling, write: 4 * ceiling },
        initial: { read: 12_000, write: 4_000 },
        // A new table's 4,000 WRU/s / 4.
        initialItemsPerSecond: 1_000,
        withinHeadroom: true,
      });
    });

    it('times a 1M and a 10M run with the ramp: (5 + 450) / 2 batches of 100 every B s for its 89 s, the rest at the ceiling', () => {
      const rampItems = ((5 + 450) / 2) * (100 / B) * 89; // 227.5 × 17.753 × 89
      expect(Math.round(rampItems)).toBe(359_459);
      expect(needs.runs[0]!.seconds).toBeCloseTo(89 + (1_000_000 - rampItems) / ceiling, 9);
      expect(needs.runs[1]!.seconds).toBeCloseTo(89 + (10_000_000 - rampItems) / ceiling, 9);
    });

    it('says what the defaults stop: a 10M upload is read whole, $100 pays for 923,361 items of gpt-4o-mini', () => {
      // 638 × $0.15 + 21 × $0.60 per 1M tokens = $108.30 per 1M items.
      expect(needs.stops.usdPerItem).toBeCloseTo(0.0001083, 10);
      expect(needs.stops).toMatchObject({
        itemsPerUpload: 10_000_000,
        itemsPerDefaultBudget: 923_361,
        itemsPerMaxBudget: 9_233_610,
        itemsPerDay: 9_233_610,
      });
    });

    it('asks only for warm throughput: a new table would serve 1,000 items/s at first', () => {
      expect(needs.asks).toHaveLength(1);
      // With 20 % to spare: 4 × 7,988.97 / 0.8 = 39,944.9 WRU/s; 2 × 7,988.97 / 0.8 = 19,972.4
      // RRU/s (rounded up).
      expect(needs.asks[0]).toMatch(
        /20 % to spare: -c tableWarmWriteUnitsPerSecond=39945 -c tableWarmReadUnitsPerSecond=19973/,
      );
    });

    it('prints the figures', () => {
      const text = renderDeploymentNeeds(needs);
      expect(text).toContain('Lambda concurrency  500 of 1,000');
      expect(text).toContain(
        '450 × 100 items a batch / 5.6 s a batch (its slowest call: 1 s median, 5 s at the 99th percentile) = 7,989 items/s, reached after 89 s of ramp',
      );
      expect(text).toContain('31,956 WRU/s (80 % of 40,000) and 15,978 RRU/s (40 % of 40,000)');
      // 89 + 640,541 / 7,989 = 169.2 s; 89 + 9,640,541 / 7,989 = 1,296 s.
      expect(text).toContain('1,000,000 items in 2.8 min, 10,000,000 items in 21.6 min');
      // 12,000 over 20 invocations.
      expect(text).toContain('claims 12,000 item ids a second at most (600 an invocation)');
      expect(text).toContain('$108.30 per 1M items');
      expect(text).toContain('the default budget pays for 923,361 items');
      expect(text).not.toContain('OVER THE QUOTA');
    });
  });

  describe('a provisioned fleet past the quotas', () => {
    const config: AssayConfig = {
      ...DEFAULT_CONFIG,
      workerEventSourceMode: 'provisioned',
      workerMaxPollers: 100,
      // Ignored in provisioned mode: Lambda takes pollers or a maximum concurrency, not both.
      workerMaxConcurrency: 50,
    };
    const needs = deploymentNeeds(config);

    it('runs 10 invocations a poller, and the account is 50 short', () => {
      expect(workerConcurrency(config)).toBe(1_000);
      expect(needs.concurrency.total).toBe(1_050);
      expect(needs.concurrency.fits).toBe(false);
      expect(needs.asks[0]).toMatch(/^Lambda concurrent executions: 1050 /);
      expect(renderDeploymentNeeds(needs)).toContain('1,050 of 1,000  OVER THE QUOTA');
    });

    it('is held by the table writes at 10,000 items/s, at 100 % of the quota: asks for 50,000 WRU/s', () => {
      // 1,000 × 100 / 5.633 s = 17,753 items/s of workers.
      expect(Math.round(needs.fleet.itemsPerSecond)).toBe(17_753);
      expect(needs.ceilingItemsPerSecond).toBe(10_000);
      expect(needs.limitedBy).toBe('table writes');
      expect(needs.table.atCeiling).toEqual({ read: 20_000, write: 40_000 });
      expect(needs.table.withinHeadroom).toBe(false);
      expect(needs.asks[1]).toMatch(/^DynamoDB table-level throughput: 50000 WRU\/s and 25000 RRU\/s/);
    });

    it('ramps from 2 pollers (20 invocations) at 1,000 a minute to the 563 the ceiling takes', () => {
      // 10,000 items/s × 5.633 s / 100 = 563.3 batches; (563.3 − 20) / 1,000 min = 32.6 s.
      const B = batchSeconds(100);
      const needed = (10_000 * B) / 100;
      const ramp = ((needed - 20) / 1_000) * 60;
      expect(needs.fleet.rampSeconds).toBeCloseTo(ramp, 9);
      expect(ramp).toBeCloseTo(32.6, 1);
      const rampItems = ((20 + needed) / 2) * (100 / B) * ramp;
      expect(needs.runs[0]!.seconds).toBeCloseTo(ramp + (1_000_000 - rampItems) / 10_000, 9);
    });
  });

  it('times a run that ends within the ramp from the ramp itself', () => {
    // 1,000 workers × 100 items / B = 17,753 items/s, the table quota raised out of the way. A
    // batch scores k = 100 / B items a second; the ramp from 5 to 1,000 batches takes 199 s and
    // (5 + 1,000) / 2 × k × 199 = 1.78M items: 1M is scored within it, at t where
    // 5 k t + (300 / 60) k t² / 2 = 1,000,000.
    const needs = deploymentNeeds({
      ...DEFAULT_CONFIG,
      workerMaxConcurrency: 1_000,
      workerBatchSize: 100,
      tableWriteQuota: 1_000_000,
      tableReadQuota: 1_000_000,
      lambdaConcurrencyQuota: 2_000,
    });
    const k = 100 / batchSeconds(100);
    expect(needs.ceilingItemsPerSecond).toBeCloseTo(1_000 * k, 9);
    const [a, b] = [2.5 * k, 5 * k];
    expect(needs.runs[0]!.seconds).toBeCloseTo((-b + Math.sqrt(b ** 2 + 4 * a * 1e6)) / (2 * a), 9);
    const rampItems = ((5 + 1_000) / 2) * k * 199;
    expect(needs.runs[1]!.seconds).toBeCloseTo(199 + (10_000_000 - rampItems) / (1_000 * k), 9);
    expect(needs.asks).toHaveLength(1);
  });

  it('says an upload is read whole and no budget applies when the limits are 0', () => {
    const needs = deploymentNeeds({
      ...DEFAULT_CONFIG,
      maxItemsPerUpload: 0,
      defaultRunBudgetUsd: 0,
      maxRunBudgetUsd: 0,
      dailySpendLimitUsd: 0,
    });
    expect(needs.stops).toMatchObject({
      itemsPerUpload: undefined,
      itemsPerDefaultBudget: undefined,
      itemsPerMaxBudget: undefined,
      itemsPerDay: undefined,
    });
    const text = renderDeploymentNeeds(needs);
    expect(text).toContain('is read whole');
    expect(text).toContain('the default budget: none');
  });
});
