/**
 * The ONE DynamoDB table of the AWS shell: its definition (what the CDK stack and the moto
 * stand-in create) and the shape of every key the adapters write. Each entity lives under its
 * own partition-key prefix, so entities never collide:
 *
 * | entity            | pk                     | sk                         | adapter                  |
 * |-------------------|------------------------|----------------------------|--------------------------|
 * | run               | `RUN#<runId>`          | `META`                     | dynamo-run-store.ts      |
 * | run's definition  | `RUN#<runId>`          | `SPEC`                     | dynamo-run-store.ts      |
 * | part of a run     | `RUN#<runId>`          | `PART#<part>`              | dynamo-run-store.ts      |
 * | chunk of ingest   | `RUN#<runId>`          | `CHUNK#<chunk>`            | dynamo-chunk-store.ts    |
 * | chunk's duplicate | `RUN#<runId>`          | `DUP#<chunk>#<row>`        | dynamo-chunk-store.ts    |
 * | item id claim     | `IDS#<runId>#<shard>`  | `<itemId>`                 | dynamo-chunk-store.ts    |
 * | result            | `RESULTS#<runId>#<part>#<slot>` | `R#<row>#<itemId>` | dynamo-run-store.ts      |
 * | block counter     | `RESULTS#<runId>#<part>#<slot>` | `COUNT#<block>`    | dynamo-run-store.ts      |
 * | spend shard       | `SPEND#<runId>#<shard>` | `SPEND`                   | dynamo-run-store.ts      |
 * | budget ledger     | `SPEND#<runId>#budget` | `SPEND`                    | dynamo-budget-ledger.ts  |
 * | day's spend shard | `DAYSPEND#<yyyy-mm-dd>#<shard>` | `SPEND`           | dynamo-run-store.ts      |
 * | active run        | `ACTIVE`               | `RUN#<runId>`              | dynamo-run-store.ts      |
 * | sweep membership  | `RUN#<runId>`          | `SWEEP#<sweepId>`          | dynamo-sweeps.ts         |
 * | suite index       | `SUITE#<suiteName>`    | `RUN#<startedAt>#<runId>`  | dynamo-run-store.ts      |
 * | sweep             | `SWEEP#<sweepId>`      | `META`                     | dynamo-sweeps.ts         |
 * | leaderboard entry | `LEADERBOARD`          | `<dataset>#<runId>`        | dynamo-sweeps.ts         |
 * | cache entry       | `CACHE#<key>`          | `CACHE`                    | dynamo-llm-cache.ts      |
 * | prompt reader     | `PROMPT#<path>`        | `SUITE#<suiteName>`        | dynamo-prompt-index.ts   |
 * | suite prompts     | `SUITEPROMPTS#<name>`  | `PROMPTS`                  | dynamo-prompt-index.ts   |
 * | token bucket      | `LIMIT#<vendor:model>` | `LIMIT`                    | dynamo-rate-limit-store.ts |
 * | bucket shard      | `LIMIT#<vendor:model>#<shard>` | `LIMIT`            | dynamo-rate-limit-store.ts |
 * | batch call        | `BATCHRUN#<runId>`     | `CALL#<key>`               | dynamo-batch-store.ts    |
 * | waiting item      | `BATCHRUN#<runId>`     | `WAIT#<key>#<itemId>`      | dynamo-batch-store.ts    |
 * | run has waiters   | `BATCHLANE`            | `WAITING#<runId>`          | dynamo-batch-store.ts    |
 * | open batch        | `BATCHLANE`            | `OPEN#<runId>#<batchId>`   | dynamo-batch-store.ts    |
 *
 * The attributes of each entity and its access patterns are described in its adapter.
 */

/** The table's definition: string keys `pk`/`sk`, billed on demand, items expire by `ttl` (epoch seconds), no secondary indexes. */
export const TABLE = {
  partitionKey: { name: 'pk', type: 'S' },
  sortKey: { name: 'sk', type: 'S' },
  billingMode: 'PAY_PER_REQUEST',
  timeToLiveAttribute: 'ttl',
  globalSecondaryIndexes: [],
} as const;

/** The key of any item of the table. */
export type TableKey = Record<typeof TABLE.partitionKey.name | typeof TABLE.sortKey.name, string>;

/** Every key prefix and fixed key of the table (one entry per meaning; two meanings may share a text). */
export const KEY_PREFIXES = {
  run: 'RUN#',
  part: 'PART#',
  results: 'RESULTS#',
  result: 'R#',
  count: 'COUNT#',
  spend: 'SPEND#',
  daySpend: 'DAYSPEND#',
  activeRun: 'RUN#',
  chunk: 'CHUNK#',
  chunkDuplicate: 'DUP#',
  ids: 'IDS#',
  suite: 'SUITE#',
  suiteRun: 'RUN#',
  sweep: 'SWEEP#',
  cache: 'CACHE#',
  promptReaders: 'PROMPT#',
  promptReader: 'SUITE#',
  suitePrompts: 'SUITEPROMPTS#',
  limit: 'LIMIT#',
  batchRun: 'BATCHRUN#',
  batchCall: 'CALL#',
  batchWait: 'WAIT#',
  batchWaiting: 'WAITING#',
  batchOpen: 'OPEN#',
} as const;

/** Sort keys (and a partition key) that are fixed words rather than prefixes. */
export const FIXED_KEYS = {
  /** Sort key of a run's record and of a sweep's record. */
  meta: 'META',
  /** Sort key of a run's definition (its suite and prompt snapshot). */
  spec: 'SPEC',
  /** Sort key of a run's spend shard. */
  spend: 'SPEND',
  /** Partition of the runs not finished yet (what the watchdog looks at). */
  active: 'ACTIVE',
  cache: 'CACHE',
  suitePrompts: 'PROMPTS',
  limit: 'LIMIT',
  /** Partition of the leaderboard entries. */
  leaderboard: 'LEADERBOARD',
  /** Partition of the batch lane's run marks and open batches. */
  batchLane: 'BATCHLANE',
} as const;

const P = KEY_PREFIXES;

// Runs and their results (dynamo-run-store.ts).
export const META_SK = FIXED_KEYS.meta;
export const SPEC_SK = FIXED_KEYS.spec;
export const runPk = (runId: string) => `${P.run}${runId}`;

/**
 * A run's results are stored by part (a stretch of the dataset's rows that ingest handed on
 * together) and, within a part, over {@link RESULT_SLOTS} partition keys by row, so that the
 * writes of a run that is scored a few thousand items a second spread over many keys whatever
 * order the items come in: DynamoDB serves one partition key at most 1,000 write units and
 * 3,000 read units a second. Each slot's results sort by row, so a part read slot by slot and
 * merged comes out in report order.
 */
export const RESULT_SLOTS = 64;
/** The slot of a row (rows are whole numbers from 0). */
export const slotOf = (row: number) => row % RESULT_SLOTS;
export const resultPk = (runId: string, part: number, slot: number) => `${P.results}${runId}#${part}#${slot}`;
/** Rows are written with this many digits, so that sort keys sort by row. */
const ROW_DIGITS = 12;
export const RESULT_PREFIX = P.result;
export const resultSk = (row: number, itemId: string) =>
  `${P.result}${String(row).padStart(ROW_DIGITS, '0')}#${itemId}`;
/** The item id of a result's sort key. */
export const itemIdOfResultSk = (sk: string) => sk.slice(P.result.length + ROW_DIGITS + 1);
/**
 * A part's results are counted in blocks of this many consecutive rows, each block a counter
 * item of its own in the partition of slot {@link countSlotOf}: a counter holds the rows it
 * counted, and a write costs a unit per KB of the item, so no counter may grow past 1 KB however
 * many rows the part holds. Consecutive rows share a counter so that a worker's batch, whose
 * items mostly came off the queue together and so were sent together, counts its results in a
 * few writes, not one per result.
 */
export const COUNT_BLOCK_ROWS = 128;
/** The block of a row's counter (rows `COUNT_BLOCK_ROWS·k` to `COUNT_BLOCK_ROWS·(k+1) − 1`). */
export const countBlockOf = (row: number) => Math.floor(row / COUNT_BLOCK_ROWS);
/** A row's place in its block's counter, 0 to {@link COUNT_BLOCK_ROWS} − 1 (what the counter's set holds). */
export const countPlaceOf = (row: number) => row % COUNT_BLOCK_ROWS;
/** The slot whose partition holds a block's counter: blocks spread over the slots as rows do. */
export const countSlotOf = (block: number) => block % RESULT_SLOTS;
export const COUNT_PREFIX = P.count;
export const countSk = (block: number) => `${P.count}${String(block).padStart(6, '0')}`;
/** A part's record, in the run's partition (sorted by part). */
export const PART_PREFIX = P.part;
export const partSk = (part: number) => `${P.part}${String(part).padStart(6, '0')}`;
/**
 * A run with a budget adds its results' cost to these shards (a worker adds a batch's at once,
 * each flush to the next shard), so that what a run has spent is read from a handful of items
 * however large the run.
 */
export const SPEND_SHARDS = 16;
export const spendPk = (runId: string, shard: number) => `${P.spend}${runId}#${shard}`;
export const SPEND_SK = FIXED_KEYS.spend;
/**
 * A budgeted run's ledger: what processes leased of its budget, in blocks of many calls (see
 * dynamo-budget-ledger.ts), so one item takes a fleet's leases (about one per 64 calls: some
 * 110 writes a second at 7,000 calls a second, within the 1,000 a key takes).
 */
export const ledgerPk = (runId: string) => `${P.spend}${runId}#budget`;
export const LEDGER_SK = FIXED_KEYS.spend;
/**
 * Every result's cost, whatever its run, is also added to one of these shards of its UTC day
 * (a worker adds a batch's at once, each flush to the next shard), so the day's spend across
 * runs (the deploy's daily limit) is read from a handful of items, which every worker reads
 * every few seconds, and no shard takes more than a hundred or so writes a second from a fleet
 * recording thousands of results a second.
 */
export const DAY_SPEND_SHARDS = 8;
/** `day` is the UTC date, `yyyy-mm-dd`. */
export const daySpendPk = (day: string, shard: number) => `${P.daySpend}${day}#${shard}`;
// The ingest of a dataset in chunks (dynamo-chunk-store.ts): a chunk's holder and progress, and
// which row first had each item id, spread over shards by the id's hash.
export const chunkSk = (chunk: number) => `${P.chunk}${String(chunk).padStart(6, '0')}`;
/** A row of a chunk whose item id a lower row holds (noted by whichever chunk found it). */
export const chunkDuplicatePrefix = (chunk: number) =>
  `${P.chunkDuplicate}${String(chunk).padStart(6, '0')}#`;
export const chunkDuplicateSk = (chunk: number, row: number) => `${chunkDuplicatePrefix(chunk)}${row}`;
export const ID_SHARDS = 64;
export const idsPk = (runId: string, shard: number) => `${P.ids}${runId}#${shard}`;

/** Runs not finished yet, one item each, for the watchdog: written with the run, deleted when it is done. */
export const ACTIVE_PK = FIXED_KEYS.active;
export const activeSk = (runId: string) => `${P.activeRun}${runId}`;
/** The suite index: one item per run of the suite, sorted by start time. */
export const suitePk = (suiteName: string) => `${P.suite}${suiteName}`;
export const SUITE_RUN_PREFIX = P.suiteRun;
export const suiteRunSk = (startedAt: string, runId: string) => `${P.suiteRun}${startedAt}#${runId}`;

// Sweeps and the leaderboard (dynamo-sweeps.ts). A sweep's membership item sits under its run's pk.
export const SWEEP_PREFIX = P.sweep;
export const sweepPk = (sweepId: string) => `${P.sweep}${sweepId}`;
export const sweepMemberSk = sweepPk;
export const LEADERBOARD_PK = FIXED_KEYS.leaderboard;
export const leaderboardSk = (dataset: string, runId: string) => `${dataset}#${runId}`;

// The LLM cache (dynamo-llm-cache.ts).
export const cachePk = (key: string) => `${P.cache}${key}`;
export const CACHE_SK = FIXED_KEYS.cache;

// The prompt index (dynamo-prompt-index.ts).
export const promptPk = (path: string) => `${P.promptReaders}${path}`;
export const promptReaderSk = (suiteName: string) => `${P.promptReader}${suiteName}`;
export const suitePromptsPk = (suiteName: string) => `${P.suitePrompts}${suiteName}`;
export const SUITE_PROMPTS_SK = FIXED_KEYS.suitePrompts;

// The fleet's token buckets (dynamo-rate-limit-store.ts).
export const limitPk = (key: string) => `${P.limit}${key}`;
/** One shard of a bucket a fleet leases from: a partition of its own, so no shard's item is hot. */
export const limitShardPk = (key: string, shard: number) => `${P.limit}${key}#${shard}`;
export const LIMIT_SK = FIXED_KEYS.limit;

// The batch lane (dynamo-batch-store.ts).
export const BATCH_LANE_PK = FIXED_KEYS.batchLane;
export const batchRunPk = (runId: string) => `${P.batchRun}${runId}`;
export const BATCH_CALL_PREFIX = P.batchCall;
export const batchCallSk = (key: string) => `${P.batchCall}${key}`;
/** The sort-key prefix of the items waiting for one call. */
export const batchWaitPrefix = (key: string) => `${P.batchWait}${key}#`;
export const batchWaitSk = (key: string, itemId: string) => `${batchWaitPrefix(key)}${itemId}`;
export const BATCH_WAITING_PREFIX = P.batchWaiting;
export const batchWaitingSk = (runId: string) => `${P.batchWaiting}${runId}`;
export const BATCH_OPEN_PREFIX = P.batchOpen;
export const batchOpenSk = (batch: { runId: string; batchId: string }) =>
  `${P.batchOpen}${batch.runId}#${batch.batchId}`;
