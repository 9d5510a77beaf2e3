/** How a budgeted run's ledger is split: how many shards a budget gets, and which is an item's home. */
import { describe, expect, it } from 'vitest';
import { LEDGER_SHARDS, ledgerHomeShard, ledgerShardsFor } from '../../../shared/lib/layout/table.js';

describe('ledger shards', () => {
  it('keeps a small budget whole and splits a larger one in shares of a quarter dollar, up to the most', () => {
    expect(ledgerShardsFor(0.5)).toBe(1);
    expect(ledgerShardsFor(1.99)).toBe(1);
    expect(ledgerShardsFor(2)).toBe(8);
    expect(ledgerShardsFor(10)).toBe(40);
    expect(ledgerShardsFor(100)).toBe(LEDGER_SHARDS);
    expect(ledgerShardsFor(1_000_000)).toBe(LEDGER_SHARDS);
  });

  it('gives each item one home among the shards, spread evenly', () => {
    const counts = new Array<number>(LEDGER_SHARDS).fill(0);
    for (let i = 0; i < 64_000; i += 1) {
      const home = ledgerHomeShard(`item-${i}`, LEDGER_SHARDS);
      expect(home).toBe(ledgerHomeShard(`item-${i}`, LEDGER_SHARDS));
      counts[home]! += 1;
    }
    // 500 an item on average: no shard takes a fifth more than its share.
    expect(Math.max(...counts)).toBeLessThan(600);
    expect(Math.min(...counts)).toBeGreaterThan(400);
  });
});
