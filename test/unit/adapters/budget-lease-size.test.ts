/** How large a block of a run's budget a process leases on DynamoDB. */
import { describe, expect, it } from 'vitest';
import {
  LEASE_BUDGET_SHARE,
  LEASE_CALLS,
  LEASE_LEFT_SHARE,
  leaseSize,
} from '../../../shared/adapters/aws/dynamo-budget-ledger.js';

describe('budget lease size', () => {
  it('leases 64 calls of a small call at once, so the ledger takes one write per 64 calls', () => {
    expect(leaseSize(0.001, 0.001, 100, 0)).toBeCloseTo(LEASE_CALLS * 0.001, 12);
  });

  it('leases at most half a percent of the budget: what a stopped process may lose', () => {
    expect(leaseSize(0.01, 0.01, 100, 0)).toBeCloseTo(LEASE_BUDGET_SHARE * 100, 12);
  });

  it('shrinks the block as the budget nears its end, never below what the call needs', () => {
    expect(leaseSize(0.001, 0.001, 100, 99.5)).toBeCloseTo(LEASE_LEFT_SHARE * 0.5, 12);
    expect(leaseSize(0.001, 0.001, 100, 99.99)).toBeCloseTo(0.001, 12);
    // A call larger than any block gets what it needs.
    expect(leaseSize(3, 3, 100, 0)).toBe(3);
  });
});
