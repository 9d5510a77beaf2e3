import { describe, expect, it } from 'vitest';
import {
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

  describe('at the defaults', () => {
    const needs = deploymentNeeds(DEFAULT_CONFIG);

    it('fits the account: 400 workers, 20 + 20 reserved, 2 × 2 dead-letter, 5 batch polls and 1 watchdog overlapping', () => {
      expect(needs.concurrency).toEqual({
        // The dead-letter function drains two queues (items' and events'), up to 2 each; the
        // batch poller runs every minute for up to 300 s, the watchdog every 5 for up to 120 s.
        byFunction: { worker: 400, ingest: 20, aggregate: 20, deadLetter: 4, batchPoller: 5, watchdog: 1 },
        total: 450,
        reserved: 40,
        quota: 1_000,
        fits: true,
      });
    });

    it('sets the ceiling by the workers: 400 × 20 / 1 s = 8,000 items/s, at 80 % of the write quota', () => {
      expect(needs.fleet).toEqual({
        mode: 'standard',
        workers: 400,
        batchSize: 20,
        itemsPerSecond: 8_000,
        // From 5 concurrent batches, 300 more a minute, to the 400 the ceiling takes: 395 / 300 min.
        rampSeconds: 79,
      });
      expect(needs.ceilingItemsPerSecond).toBe(8_000);
      expect(needs.limitedBy).toBe('workers');
      expect(needs.table).toEqual({
        quota: { read: 40_000, write: 40_000 },
        // 40,000 WRU/s / 4 = 10,000; 40,000 RRU/s / 2 = 20,000.
        itemsPerSecond: 10_000,
        atCeiling: { read: 16_000, write: 32_000 },
        initial: { read: 12_000, write: 4_000 },
        // A new table's 4,000 WRU/s / 4.
        initialItemsPerSecond: 1_000,
        withinHeadroom: true,
      });
    });

    it('times a 1M and a 10M run with the ramp: 319,950 items in its 79 s, the rest at 8,000 items/s', () => {
      // Ramp items: (5 + 400) / 2 batches × 20 items × 79 s = 319,950.
      expect(needs.runs).toEqual([
        { items: 1_000_000, seconds: 79 + 680_050 / 8_000 },
        { items: 10_000_000, seconds: 79 + 9_680_050 / 8_000 },
      ]);
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
      expect(needs.asks[0]).toMatch(
        /tableWarmWriteUnitsPerSecond=32000 -c tableWarmReadUnitsPerSecond=16000/,
      );
    });

    it('prints the figures', () => {
      const text = renderDeploymentNeeds(needs);
      expect(text).toContain('Lambda concurrency  450 of 1,000');
      expect(text).toContain(
        '400 × 20 items a batch / 1 s a call = 8,000 items/s, reached after 79 s of ramp',
      );
      expect(text).toContain('32,000 WRU/s (80 % of 40,000) and 16,000 RRU/s (40 % of 40,000)');
      expect(text).toContain('1,000,000 items in 2.7 min, 10,000,000 items in 21.5 min');
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
      workerBatchSize: 20,
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
      expect(needs.fleet.itemsPerSecond).toBe(20_000);
      expect(needs.ceilingItemsPerSecond).toBe(10_000);
      expect(needs.limitedBy).toBe('table writes');
      expect(needs.table.atCeiling).toEqual({ read: 20_000, write: 40_000 });
      expect(needs.table.withinHeadroom).toBe(false);
      expect(needs.asks[1]).toMatch(/^DynamoDB table-level throughput: 50000 WRU\/s and 25000 RRU\/s/);
    });

    it('ramps from 2 pollers (20 invocations) at 1,000 a minute to the 500 the ceiling takes', () => {
      // (500 - 20) / 1,000 min = 28.8 s; ramp items (20 + 500) / 2 × 20 × 28.8 = 149,760.
      expect(needs.fleet.rampSeconds).toBeCloseTo(28.8, 9);
      expect(needs.runs[0]!.seconds).toBeCloseTo(28.8 + 850_240 / 10_000, 9);
    });
  });

  it('times a run that ends within the ramp from the ramp itself', () => {
    // 1,000 workers × 100 items = 100,000 items/s, the table quota raised out of the way. The
    // ramp from 5 to 1,000 batches takes 199 s and 9,999,750 items: 1M is scored within it, at
    // t where 5 × 100 t + (300 / 60) × 100 t² / 2 = 1,000,000, i.e. 250 t² + 500 t = 1e6.
    const needs = deploymentNeeds({
      ...DEFAULT_CONFIG,
      workerMaxConcurrency: 1_000,
      workerBatchSize: 100,
      tableWriteQuota: 1_000_000,
      tableReadQuota: 1_000_000,
      lambdaConcurrencyQuota: 2_000,
    });
    expect(needs.ceilingItemsPerSecond).toBe(100_000);
    expect(needs.runs[0]!.seconds).toBeCloseTo((-500 + Math.sqrt(500 ** 2 + 4 * 250 * 1e6)) / 500, 9);
    expect(needs.runs[0]!.seconds).toBeCloseTo(62.2534, 3);
    expect(needs.runs[1]!.seconds).toBeCloseTo(199 + 250 / 100_000, 9);
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
