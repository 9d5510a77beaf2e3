/**
 * A budgeted run's budget on DynamoDB, leased to processes in blocks. The run's ledger item
 * (`SPEND#<runId>#budget`, sk `SPEND`) holds `grantedUsd`: all the money any process has leased
 * of the run's budget. A process leases a block with one conditional ADD that keeps `grantedUsd`
 * within the budget, and then reserves calls from its block in memory: concurrent calls of the
 * process share it, with no write. A settlement gives back to the process's block what a call
 * cost less than it reserved, and takes from it what the call cost more (adding to the ledger
 * what the block lacks, past the budget if it must: a settlement is never refused). Nothing per item or per call is written.
 *
 * Safety: `grantedUsd` never passes the budget on a lease, and a process spends only what it
 * leased, so a run spends at most its budget plus what calls cost beyond their reservation (the
 * error of the input's estimate). The ledger only grows: what a process leased and did not spend
 * when it ended (a container stopped or crashed) is lost to the run, at most one block a process.
 *
 * Block size: a lease is at least what the call needs; beyond that it takes
 * {@link LEASE_CALLS} calls' worth, at most {@link LEASE_BUDGET_SHARE} of the budget, and at
 * most {@link LEASE_LEFT_SHARE} of what the process last saw left of the budget, so blocks
 * shrink as the run nears its budget and the last cents are not parked in idle processes. A
 * fleet making 7,000 calls a second then leases at most about 110 times a second (one lease
 * per 64 calls), a tenth of what one DynamoDB key takes, so the ledger is one item. A lease that
 * does not fit reads what is left (the refused write returns the item) and leases exactly that
 * if the call fits in it, or refuses the call; a process that has seen the budget full refuses
 * further calls without a write (the ledger never shrinks).
 */
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { LEDGER_SK, ledgerPk } from '../../lib/layout/table.js';

export interface DynamoBudgetLedgerOptions {
  tableName: string;
  /** Sends a command, retrying throttled calls (the run store's). */
  send: <T = unknown>(command: object) => Promise<T>;
}

/** Calls' worth of a call's reservation a lease takes beyond what the call needs. */
export const LEASE_CALLS = 64;
/** The most of the budget one lease takes (0.5 %): a stopped process loses at most this. */
export const LEASE_BUDGET_SHARE = 0.005;
/** The most of what is left of the budget (as last seen) one lease takes. */
export const LEASE_LEFT_SHARE = 1 / 16;
/** Dollar sums are floating point: a reservation this close to the budget still fits. */
const EPSILON = 1e-12;
/** Leases refused in a row (others took the room first) before a call is refused. */
const LEASE_TRIES = 5;

/**
 * How much a process leases when it needs `needUsd` more for a call reserving `callUsd`, of a
 * budget of which `grantedUsd` was last seen leased (0 when not seen yet).
 */
export function leaseSize(needUsd: number, callUsd: number, budgetUsd: number, grantedUsd: number): number {
  const left = Math.max(0, budgetUsd - grantedUsd);
  const block = Math.min(LEASE_CALLS * callUsd, LEASE_BUDGET_SHARE * budgetUsd, LEASE_LEFT_SHARE * left);
  return Math.max(needUsd, block);
}

/** One run's money in this process. */
interface RunLease {
  /** Leased and not yet reserved by a call. */
  freeUsd: number;
  /** The ledger's `grantedUsd` as this process last saw it (it only grows). */
  grantedUsd: number;
  /** The lease being asked for, which other calls of the process wait for. */
  leasing: Promise<unknown> | undefined;
  /** What each item holds: its calls in flight and its settled spend not recorded yet. */
  holds: Map<string, number>;
  heldUsd: number;
}

export class DynamoBudgetLedger {
  private readonly runs = new Map<string, RunLease>();

  constructor(private readonly options: DynamoBudgetLedgerOptions) {}

  /** Reserves `usd` for a call of `itemId` from this process's lease, leasing more when it must. */
  async reserve(runId: string, itemId: string, usd: number, budgetUsd: number): Promise<boolean> {
    if (usd > budgetUsd + EPSILON) return false;
    const run = this.run(runId);
    for (;;) {
      if (run.freeUsd + EPSILON >= usd) {
        run.freeUsd -= usd;
        this.hold(run, itemId, usd);
        return true;
      }
      if (run.leasing) {
        await run.leasing.catch(() => undefined);
        continue;
      }
      const need = usd - run.freeUsd;
      // Nothing gives money back to the ledger: a budget seen full stays full.
      if (run.grantedUsd + need > budgetUsd + EPSILON) return false;
      const leased = this.lease(runId, run, need, usd, budgetUsd);
      run.leasing = leased;
      try {
        if (!(await leased)) return false;
      } finally {
        run.leasing = undefined;
      }
    }
  }

  /**
   * The call reserved `reservedUsd` and cost `actualUsd`: the difference goes back to (or comes
   * from) this process's lease. A shortfall the lease cannot cover (the call cost more than its
   * reservation, and the lease had no more) is added to the ledger as it is, past the budget if
   * it must be: the call is bought, and its cost counts.
   */
  async settle(runId: string, itemId: string, reservedUsd: number, actualUsd: number): Promise<void> {
    const run = this.run(runId);
    run.freeUsd += reservedUsd - actualUsd;
    this.hold(run, itemId, actualUsd - reservedUsd);
    if (run.freeUsd >= -EPSILON) return;
    // Counted on the lease once the ledger has it: a reservation meanwhile finds the lease short
    // and leases the shortfall too.
    const need = -run.freeUsd;
    const granted = await this.add(runId, need);
    run.freeUsd += need;
    run.grantedUsd = Math.max(run.grantedUsd, granted);
  }

  /** What this process's items hold now: calls in flight and settled spend not recorded yet. */
  reserved(runId: string): number {
    return this.runs.get(runId)?.heldUsd ?? 0;
  }

  /** The item's result is recorded: what it spent is spent, and it holds nothing more here. */
  release(runId: string, itemId: string): void {
    const run = this.runs.get(runId);
    const held = run?.holds.get(itemId);
    if (!run || held === undefined) return;
    run.holds.delete(itemId);
    run.heldUsd -= held;
    if (run.holds.size === 0) run.heldUsd = 0;
  }

  private run(runId: string): RunLease {
    let run = this.runs.get(runId);
    if (!run) {
      run = { freeUsd: 0, grantedUsd: 0, leasing: undefined, holds: new Map(), heldUsd: 0 };
      this.runs.set(runId, run);
    }
    return run;
  }

  private hold(run: RunLease, itemId: string, usd: number): void {
    const now = (run.holds.get(itemId) ?? 0) + usd;
    run.heldUsd += usd;
    if (now > EPSILON) run.holds.set(itemId, now);
    else run.holds.delete(itemId);
    if (run.holds.size === 0) run.heldUsd = 0;
  }

  /**
   * Leases a block of at least `need` into the process's lease: true when leased. A block that
   * does not fit is retried as exactly what is left, when `need` fits in that.
   */
  private async lease(
    runId: string,
    run: RunLease,
    need: number,
    callUsd: number,
    budgetUsd: number,
  ): Promise<boolean> {
    let usd = Math.min(budgetUsd, leaseSize(need, callUsd, budgetUsd, run.grantedUsd));
    for (let tries = 0; tries < LEASE_TRIES; tries += 1) {
      try {
        const out = await this.options.send<{ Attributes?: Record<string, unknown> }>(
          new UpdateCommand({
            TableName: this.options.tableName,
            Key: { pk: ledgerPk(runId), sk: LEDGER_SK },
            UpdateExpression: 'ADD #granted :usd',
            ConditionExpression: 'attribute_not_exists(#granted) OR #granted <= :room',
            ExpressionAttributeNames: { '#granted': 'grantedUsd' },
            ExpressionAttributeValues: { ':usd': usd, ':room': budgetUsd - usd + EPSILON },
            ReturnValues: 'UPDATED_NEW',
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          }),
        );
        run.freeUsd += usd;
        run.grantedUsd = Math.max(run.grantedUsd, Number(out.Attributes?.grantedUsd ?? usd));
        return true;
      } catch (err) {
        if (!(err instanceof ConditionalCheckFailedException)) throw err;
        const granted = grantedOf(err.Item) ?? (await this.granted(runId));
        run.grantedUsd = Math.max(run.grantedUsd, granted);
        const left = budgetUsd - run.grantedUsd;
        if (left + EPSILON < need) return false;
        usd = Math.max(need, left);
      }
    }
    return false;
  }

  /** The ledger's `grantedUsd` now (a consistent read). */
  private async granted(runId: string): Promise<number> {
    const out = await this.options.send<{ Item?: Record<string, unknown> }>(
      new GetCommand({
        TableName: this.options.tableName,
        Key: { pk: ledgerPk(runId), sk: LEDGER_SK },
        ConsistentRead: true,
      }),
    );
    return Number(out.Item?.grantedUsd ?? 0);
  }

  /** An unconditional ADD to the ledger: `grantedUsd` after it. */
  private async add(runId: string, usd: number): Promise<number> {
    const out = await this.options.send<{ Attributes?: Record<string, unknown> }>(
      new UpdateCommand({
        TableName: this.options.tableName,
        Key: { pk: ledgerPk(runId), sk: LEDGER_SK },
        UpdateExpression: 'ADD #granted :usd',
        ExpressionAttributeNames: { '#granted': 'grantedUsd' },
        ExpressionAttributeValues: { ':usd': usd },
        ReturnValues: 'UPDATED_NEW',
      }),
    );
    return Number(out.Attributes?.grantedUsd ?? usd);
  }
}

/** `grantedUsd` of the item a refused write returns (in DynamoDB's own form): undefined when absent. */
function grantedOf(item: Record<string, unknown> | undefined): number | undefined {
  const value = item?.grantedUsd as { N?: string } | number | undefined;
  if (value === undefined) return undefined;
  return typeof value === 'number' ? value : Number(value.N);
}
