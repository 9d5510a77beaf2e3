/**
 * A budgeted run's ledger on DynamoDB, in shards: `committedUsd` on each shard's ledger item is
 * what the run's recorded results spent plus what its items hold reserved, on that shard; each
 * shard is allowed `budget / shards` (see `LEDGER_SHARDS` in shared/lib/layout/table.ts).
 *
 * | entity       | pk                             | sk              | attributes                                                                 |
 * |--------------|--------------------------------|-----------------|----------------------------------------------------------------------------|
 * | ledger shard | `SPEND#<runId>#budget#<shard>` | `SPEND`         | `committedUsd`                                                             |
 * | hold         | `SPEND#<runId>#budget#<home>`  | `HOLD#<itemId>` | `usd` (all the item holds), `shard<k>` (the part of it on shard k), `writes` |
 *
 * A reservation is a conditional ADD on one shard that keeps the shard within its allowance,
 * tried first on the item's home shard (by the hash of its id) and, when that shard has no room,
 * on the next ones in turn, until one takes it or all have refused: the shards together never
 * pass the budget, and a reservation is refused only when no shard has room for it, so what is
 * left unused when the run runs out is less than one reservation per shard. A reservation larger
 * than one shard's allowance is split evenly over as many neighbouring shards, taken together in
 * one transaction, from each start in the same order. The item's hold, in its home shard's partition, says which shards hold what
 * for it, so that settlement and release give back to the shards that gave.
 *
 * No write here is a transaction over a ledger item and a hold: a ledger item takes a hundred
 * writes a second, and transactions holding it would refuse each other. The two writes of a step
 * are ordered instead so that the ledger never says less than the results spent plus what the
 * items hold: the ledger grows before a hold does, a hold shrinks before the ledger does. A
 * process that dies between the two leaves the ledger saying more than that (the run can spend
 * that much less), never less.
 */
import { ConditionalCheckFailedException, TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import {
  DeleteCommand,
  GetCommand,
  QueryCommand,
  TransactWriteCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { HOLD_PREFIX, holdSk, LEDGER_SK, ledgerHomeShard, ledgerPk } from '../../lib/layout/table.js';

export interface DynamoBudgetLedgerOptions {
  tableName: string;
  /** Sends a command, retrying throttled calls (the run store's). */
  send: <T = unknown>(command: object) => Promise<T>;
  /** Clock in epoch milliseconds. */
  now: () => number;
  /**
   * How long a shard that refused a reservation is not asked again for as much or more, ms (0:
   * always asked). This process's own settlements and releases on the shard end it at once.
   */
  refusalMemoMs: number;
}

/** What an item holds reserved: in all, and by ledger shard. */
export interface Hold {
  usd: number;
  byShard: Map<number, number>;
  /**
   * How many times the hold was written (its version): a release deletes the hold it read on
   * this, not on `usd`, which DynamoDB keeps to more digits than a read gives back.
   */
  writes: number | undefined;
}

/** The part of a reservation one shard took. */
interface Part {
  shard: number;
  usd: number;
}

/** Dollar sums are floating point: a reservation this close to a shard's allowance still fits. */
const EPSILON = 1e-12;
/** Tries of a release while concurrent attempts of the same item change its hold. */
const RELEASE_TRIES = 5;
const SHARD_ATTRIBUTE = /^shard(\d+)$/;

export class DynamoBudgetLedger {
  /** Reservations this process made and has not settled: by run and item, the parts of each. */
  private readonly pending = new Map<string, { usd: number; parts: Part[] }[]>();
  /** Shards that refused a reservation lately: by run and shard, the smallest refused and when. */
  private readonly refusals = new Map<string, { usd: number; at: number }>();

  constructor(private readonly options: DynamoBudgetLedgerOptions) {}

  async reserve(
    runId: string,
    shards: number,
    itemId: string,
    usd: number,
    budgetUsd: number,
  ): Promise<boolean> {
    if (usd > budgetUsd + EPSILON) return false;
    const allowance = budgetUsd / shards;
    const width = Math.min(shards, Math.max(1, Math.ceil(usd / allowance - 1e-9)));
    const home = ledgerHomeShard(itemId, shards);
    for (let step = 0; step < shards; step += 1) {
      const parts = Array.from({ length: width }, (_, j) => ({
        shard: (home + step + j) % shards,
        usd: usd / width,
      }));
      if (parts.some((part) => this.refusedLately(runId, part))) continue;
      if (!(await this.take(runId, parts, allowance))) continue;
      try {
        await this.holdAdd(runId, shards, itemId, parts);
      } catch (err) {
        // The hold could not say what the item holds: give the shards their room back.
        await Promise.all(parts.map((p) => this.ledgerAdd(runId, p.shard, -p.usd))).catch(() => undefined);
        throw err;
      }
      const key = pendingKey(runId, itemId);
      this.pending.set(key, [...(this.pending.get(key) ?? []), { usd, parts }]);
      return true;
    }
    return false;
  }

  async settle(
    runId: string,
    shards: number,
    itemId: string,
    reservedUsd: number,
    actualUsd: number,
  ): Promise<void> {
    const parts = this.takePending(runId, itemId, reservedUsd) ?? [
      { shard: ledgerHomeShard(itemId, shards), usd: reservedUsd },
    ];
    const delta = actualUsd - reservedUsd;
    if (delta === 0) return;
    const total = parts.reduce((sum, p) => sum + p.usd, 0);
    const deltas = parts.map((p) => ({
      shard: p.shard,
      usd: total === 0 ? delta / parts.length : (delta * p.usd) / total,
    }));
    const ledger = () => Promise.all(deltas.map((d) => this.ledgerAdd(runId, d.shard, d.usd)));
    if (delta > 0) {
      await ledger();
      await this.holdAdd(runId, shards, itemId, deltas);
    } else {
      await this.holdAdd(runId, shards, itemId, deltas);
      await ledger();
      for (const d of deltas) this.refusals.delete(refusalKey(runId, d.shard));
    }
  }

  /** What the run's items hold now: every shard's holds, a Query per shard. */
  async reserved(runId: string, shards: number): Promise<number> {
    const sums = await Promise.all(
      Array.from({ length: shards }, async (_, shard) => {
        let sum = 0;
        let start: Record<string, unknown> | undefined;
        do {
          const out = await this.options.send<{
            Items?: Record<string, unknown>[];
            LastEvaluatedKey?: Record<string, unknown>;
          }>(
            new QueryCommand({
              TableName: this.options.tableName,
              KeyConditionExpression: 'pk = :pk AND begins_with(sk, :hold)',
              ExpressionAttributeValues: { ':pk': ledgerPk(runId, shard), ':hold': HOLD_PREFIX },
              ProjectionExpression: 'usd',
              ...(start ? { ExclusiveStartKey: start } : {}),
            }),
          );
          for (const item of out.Items ?? []) sum += Number(item.usd ?? 0);
          start = out.LastEvaluatedKey;
        } while (start);
        return sum;
      }),
    );
    return sums.reduce((a, b) => a + b, 0);
  }

  /** The item's hold as it is now (a consistent read), or undefined when it holds nothing. */
  async readHold(runId: string, shards: number, itemId: string): Promise<Hold | undefined> {
    const out = await this.options.send<{ Item?: Record<string, unknown> }>(
      new GetCommand({
        TableName: this.options.tableName,
        Key: this.holdKey(runId, shards, itemId),
        ConsistentRead: true,
      }),
    );
    if (!out.Item) return undefined;
    const byShard = new Map<number, number>();
    for (const [name, value] of Object.entries(out.Item)) {
      const match = SHARD_ATTRIBUTE.exec(name);
      if (match) byShard.set(Number(match[1]), Number(value));
    }
    return {
      usd: Number(out.Item.usd ?? 0),
      byShard,
      writes: out.Item.writes === undefined ? undefined : Number(out.Item.writes),
    };
  }

  /**
   * A recorded result's cost goes onto the shards that hold the item's money (what each holds,
   * at most; what is left over, onto its home shard), before the hold is released, so money on
   * its way from held to spent is counted twice for a moment, never not at all.
   */
  async addCost(
    runId: string,
    shards: number,
    itemId: string,
    hold: Hold | undefined,
    cost: number,
  ): Promise<void> {
    if (cost === 0) return;
    const home = ledgerHomeShard(itemId, shards);
    const adds = new Map<number, number>();
    let left = cost;
    for (const [shard, held] of hold?.byShard ?? []) {
      const part = Math.min(Math.max(held, 0), left);
      if (part > 0) adds.set(shard, part);
      left -= part;
    }
    if (left !== 0) adds.set(home, (adds.get(home) ?? 0) + left);
    await Promise.all([...adds].map(([shard, usd]) => this.ledgerAdd(runId, shard, usd)));
  }

  /**
   * Gives back whatever the item holds (`first`: its hold as last read): the hold is deleted on
   * the condition that it was not written since it was read (a concurrent attempt of the same item may change
   * it: read again and retry), then each shard gets its part back.
   */
  async release(runId: string, shards: number, itemId: string, first: Hold | undefined): Promise<void> {
    const key = this.holdKey(runId, shards, itemId);
    let hold = first;
    for (let tries = 0; tries < RELEASE_TRIES && hold !== undefined; tries += 1) {
      try {
        await this.options.send(
          new DeleteCommand({
            TableName: this.options.tableName,
            Key: key,
            ...(hold.writes === undefined
              ? { ConditionExpression: 'attribute_not_exists(#writes)' }
              : {
                  ConditionExpression: '#writes = :writes',
                  ExpressionAttributeValues: { ':writes': hold.writes },
                }),
            ExpressionAttributeNames: { '#writes': 'writes' },
          }),
        );
      } catch (err) {
        if (!(err instanceof ConditionalCheckFailedException)) throw err;
        hold = await this.readHold(runId, shards, itemId);
        continue;
      }
      const given = [...hold.byShard].filter(([, usd]) => usd !== 0);
      await Promise.all(given.map(([shard, usd]) => this.ledgerAdd(runId, shard, -usd)));
      for (const [shard] of given) this.refusals.delete(refusalKey(runId, shard));
      return;
    }
  }

  /** The parts' conditional ADDs (one shard: one update; more: one transaction); false when refused. */
  private async take(runId: string, parts: Part[], allowance: number): Promise<boolean> {
    const updates = parts.map((part) => ({
      TableName: this.options.tableName,
      Key: { pk: ledgerPk(runId, part.shard), sk: LEDGER_SK },
      UpdateExpression: 'ADD #committed :usd',
      ConditionExpression: 'attribute_not_exists(#committed) OR #committed <= :room',
      ExpressionAttributeNames: { '#committed': 'committedUsd' },
      ExpressionAttributeValues: { ':usd': part.usd, ':room': allowance - part.usd + EPSILON },
    }));
    try {
      if (updates.length === 1) await this.options.send(new UpdateCommand(updates[0]!));
      else
        await this.options.send(
          new TransactWriteCommand({ TransactItems: updates.map((Update) => ({ Update })) }),
        );
      return true;
    } catch (err) {
      const at = this.options.now();
      if (err instanceof ConditionalCheckFailedException) {
        this.refused(runId, parts[0]!, at);
        return false;
      }
      if (err instanceof TransactionCanceledException) {
        const reasons = err.CancellationReasons ?? [];
        if (!reasons.some((r) => r.Code === 'ConditionalCheckFailed')) throw err;
        parts.forEach((part, i) => {
          if (reasons[i]?.Code === 'ConditionalCheckFailed') this.refused(runId, part, at);
        });
        return false;
      }
      throw err;
    }
  }

  private refused(runId: string, part: Part, at: number): void {
    if (this.options.refusalMemoMs <= 0) return;
    const key = refusalKey(runId, part.shard);
    const known = this.refusals.get(key);
    if (!known || at - known.at >= this.options.refusalMemoMs || part.usd < known.usd)
      this.refusals.set(key, { usd: part.usd, at });
  }

  private refusedLately(runId: string, part: Part): boolean {
    const known = this.refusals.get(refusalKey(runId, part.shard));
    return (
      known !== undefined &&
      part.usd >= known.usd &&
      this.options.now() - known.at < this.options.refusalMemoMs
    );
  }

  private takePending(runId: string, itemId: string, usd: number): Part[] | undefined {
    const key = pendingKey(runId, itemId);
    const list = this.pending.get(key);
    const at = list?.findIndex((r) => r.usd === usd) ?? -1;
    if (!list || at < 0) return undefined;
    const [taken] = list.splice(at, 1);
    if (list.length === 0) this.pending.delete(key);
    return taken!.parts;
  }

  private holdKey(runId: string, shards: number, itemId: string) {
    return { pk: ledgerPk(runId, ledgerHomeShard(itemId, shards)), sk: holdSk(itemId) };
  }

  /** ADDs to the item's hold: in all, and to each part's shard attribute. */
  private holdAdd(runId: string, shards: number, itemId: string, parts: Part[]): Promise<unknown> {
    const names: Record<string, string> = { '#usd': 'usd', '#writes': 'writes' };
    const values: Record<string, number> = { ':usd': parts.reduce((sum, p) => sum + p.usd, 0), ':one': 1 };
    const adds = ['#usd :usd', '#writes :one'];
    parts.forEach((part, i) => {
      names[`#s${i}`] = `shard${part.shard}`;
      values[`:s${i}`] = part.usd;
      adds.push(`#s${i} :s${i}`);
    });
    return this.options.send(
      new UpdateCommand({
        TableName: this.options.tableName,
        Key: this.holdKey(runId, shards, itemId),
        UpdateExpression: `ADD ${adds.join(', ')}`,
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
      }),
    );
  }

  private ledgerAdd(runId: string, shard: number, usd: number): Promise<unknown> {
    return this.options.send(
      new UpdateCommand({
        TableName: this.options.tableName,
        Key: { pk: ledgerPk(runId, shard), sk: LEDGER_SK },
        UpdateExpression: 'ADD #committed :usd',
        ExpressionAttributeNames: { '#committed': 'committedUsd' },
        ExpressionAttributeValues: { ':usd': usd },
      }),
    );
  }
}

const pendingKey = (runId: string, itemId: string) => `${runId}\n${itemId}`;
const refusalKey = (runId: string, shard: number) => `${runId}\n${shard}`;
