/**
 * Infrastructure cost of 10,000 items on AWS (arm64), from published prices and the counts
 * and durations the bench measured, beside the LLM cost of the same items.
 */

/**
 * us-east-1 on-demand list prices, as published on the AWS pricing pages (Lambda, SQS,
 * DynamoDB, S3, CloudWatch Logs, Secrets Manager) on the date below; free tiers ignored.
 * Update both together. The capacity model (bench/cloud-model.ts) prices its runs with these.
 */
export const AWS_PRICES = {
  asOf: '2025-11-01',
  region: 'us-east-1',
  /** Lambda on arm64, the first 6 billion GB-seconds of a month; the init phase is billed too (since August 2025). */
  lambdaArmGbSecondUsd: 0.0000133334,
  lambdaRequestUsd: 0.2 / 1e6,
  /** Standard queues; a request is billed per 64 KB of its payload. */
  sqsRequestUsd: 0.4 / 1e6,
  /** On-demand request units. */
  dynamoWriteUnitUsd: 0.625 / 1e6,
  dynamoReadUnitUsd: 0.125 / 1e6,
  /** Standard table class, per GB-month stored. */
  dynamoStorageGbMonthUsd: 0.25,
  /** S3 Standard: PUT, COPY, POST, LIST requests; GET and the others; storage per GB-month (first 50 TB). */
  s3PutUsd: 0.005 / 1000,
  s3GetUsd: 0.0004 / 1000,
  s3StorageGbMonthUsd: 0.023,
  /** CloudWatch Logs ingestion, Standard class, per GB (Lambda's logs: the first 10 TB of a month). */
  cloudwatchLogsIngestGbUsd: 0.5,
  /** Secrets Manager, per API call ($0.05 per 10,000). */
  secretsManagerApiCallUsd: 0.05 / 10_000,
} as const;

/** What the bench measured and what the stack declares (infra/stack.ts), per run of `items` items. */
export interface CostInputs {
  items: number;
  /** Worker batch size (SQS event source) and memory (MB). */
  workerBatch: number;
  workerMemoryMb: number;
  /** Ingest and aggregate memory (MB). */
  otherMemoryMb: number;
  /** Latency of one model call (the HTTP fake's) and our CPU time per item (measured). */
  callLatencyMs: number;
  cpuMsPerItem: number;
  /** Ingest: rows read per second (measured by the dataset reader bench). */
  ingestRowsPerSecond: number;
  /** Aggregation time per result (measured on the local run's report). */
  aggregateMsPerResult: number;
  /** Mean size of a stored result (bytes, measured from a run's log). */
  resultBytes: number;
  /** Report files written per run. */
  reportFiles: number;
}

export interface CostLine {
  service: string;
  what: string;
  usd: number;
}

/**
 * The cost lines for `inputs.items` items. Counts follow the code: ingest sends items in
 * batches of 10 (SendMessageBatch), the worker receives and deletes a batch per invocation,
 * records each result in one DynamoDB transaction (the result item and the run's counters:
 * transactions bill 2 units per KB), and the aggregator reads every result (strongly
 * consistent Query, 1 unit per 4 KB) and writes the report files.
 */
export function infrastructureCost(inputs: CostInputs): CostLine[] {
  const p = AWS_PRICES;
  const batches = Math.ceil(inputs.items / inputs.workerBatch);
  // Records of a batch run in parallel: a batch lasts one call plus the batch's CPU time.
  const workerSeconds = batches * ((inputs.callLatencyMs + inputs.workerBatch * inputs.cpuMsPerItem) / 1000);
  const ingestSeconds = inputs.items / inputs.ingestRowsPerSecond + batches * 0.01;
  const aggregateSeconds = (inputs.items * inputs.aggregateMsPerResult) / 1000;
  const gbs = (mb: number, seconds: number) => (mb / 1024) * seconds;
  const resultKb = Math.ceil(inputs.resultBytes / 1024);
  const writeUnits = inputs.items * 2 * (resultKb + 1);
  const readUnits = Math.ceil((inputs.items * inputs.resultBytes) / 4096) + batches;
  const sqsRequests = 3 * batches + 4;
  return [
    {
      service: 'Lambda',
      what: `worker ${batches} invocations × ${((workerSeconds / batches) * 1000).toFixed(0)} ms at ${inputs.workerMemoryMb} MB`,
      usd: gbs(inputs.workerMemoryMb, workerSeconds) * p.lambdaArmGbSecondUsd + batches * p.lambdaRequestUsd,
    },
    {
      service: 'Lambda',
      what: `ingest ${ingestSeconds.toFixed(1)} s + aggregate ${aggregateSeconds.toFixed(1)} s at ${inputs.otherMemoryMb} MB`,
      usd:
        gbs(inputs.otherMemoryMb, ingestSeconds + aggregateSeconds) * p.lambdaArmGbSecondUsd +
        2 * p.lambdaRequestUsd,
    },
    {
      service: 'SQS',
      what: `${sqsRequests} requests (send, receive, delete batches)`,
      usd: sqsRequests * p.sqsRequestUsd,
    },
    {
      service: 'DynamoDB',
      what: `${writeUnits} write units (transactional, ${resultKb} KB results) + ${readUnits} read units`,
      usd: writeUnits * p.dynamoWriteUnitUsd + readUnits * p.dynamoReadUnitUsd,
    },
    {
      service: 'S3',
      what: `${inputs.reportFiles} puts, 4 gets (dataset, suite, prompts)`,
      usd: inputs.reportFiles * p.s3PutUsd + 4 * p.s3GetUsd,
    },
  ];
}
