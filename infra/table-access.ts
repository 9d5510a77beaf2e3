import type { FunctionName } from '../shared/lib/layout/queues.js';

/**
 * The DynamoDB actions a function's code sends to the table, and no others. Derived from the
 * adapters (shared/adapters/aws/dynamo-*.ts) each function's composition root (functions/root.ts)
 * builds, and the store methods its use-cases call. A transaction is authorised item by item
 * (its Puts as PutItem, its Updates as UpdateItem), a BatchWriteItem by BatchWriteItem alone
 * (its delete requests included). No function scans the table.
 */
export type TableAction =
  | 'GetItem'
  | 'BatchGetItem'
  | 'Query'
  | 'PutItem'
  | 'UpdateItem'
  | 'DeleteItem'
  | 'BatchWriteItem';

/** Every function reads items (the run's record, counters, spend shards) by key and by query. */
const READ = ['GetItem', 'BatchGetItem', 'Query'] as const;

export const TABLE_ACCESS: Readonly<Record<FunctionName, readonly TableAction[]>> = {
  // The run (a transaction of Puts), invalid rows as results (Put, counted with an Update),
  // parts closed (Updates), a chunk's claim and progress (Update) and its item ids (BatchWrite),
  // the prompt index (Put, BatchWrite of new and stale entries), sweeps (a transaction of Puts),
  // a run stopped at the item limit (Update).
  ingest: [...READ, 'PutItem', 'UpdateItem', 'BatchWriteItem'],
  // Results (Put, counted with Updates and small transactions of Updates), spend shards and a
  // budgeted run's ledger leases (Update), the LLM cache and the rate limits' buckets (Put), a
  // batch-lane wait (Put).
  worker: [...READ, 'PutItem', 'UpdateItem'],
  // A dead item's failed result: Put, counted with Updates.
  deadLetter: [...READ, 'PutItem', 'UpdateItem'],
  // The claim, its renewals and the status (Updates), the aggregation's steps (Updates), the
  // leaderboard entry (Put), a sweep's claim (Update); a run done leaves the ACTIVE partition (Delete).
  aggregate: [...READ, 'PutItem', 'UpdateItem', 'DeleteItem'],
  // Open batches (Put), calls moved between states (Update), a run's mark cleared (Delete), the
  // woken items' waits deleted (BatchWrite).
  batchPoller: [...READ, 'PutItem', 'UpdateItem', 'DeleteItem', 'BatchWriteItem'],
  // The progress it saw on each active run: an Update.
  watchdog: [...READ, 'UpdateItem'],
};
