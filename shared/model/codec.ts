/**
 * Stored data, read back: results and run records from `results.jsonl` / `run.json` or
 * DynamoDB go through these zod codecs, once, at the adapter that reads them. Each record
 * carries a schema version; records written by an earlier Assay are upgraded here, or refused
 * with a message that says why. Inside, code trusts the types.
 */
import { z } from 'zod';
import { InputError } from './errors.js';
import {
  FAILURE_KINDS,
  type ItemResult,
  RESULT_SCHEMA_VERSION,
  type RunRecord,
  SCORE_KINDS,
} from './model.js';
import { checkCommonKeys, type SuiteCheck } from './suite-base.js';

/** Stored data that cannot be read: where it is, and what is wrong with it. */
export class StoredDataError extends InputError {
  override readonly name = 'StoredDataError';
}

const failureSchema = z.object({ kind: z.enum(FAILURE_KINDS), message: z.string() });
const facts = {
  explanation: z.string().optional(),
  decidedBy: z.string().optional(),
  details: z.record(z.string(), z.unknown()).optional(),
  repeats: z.array(z.union([z.string(), z.number(), z.boolean(), z.null()])).optional(),
  tie: z.boolean().optional(),
};
const scoreSchema = z.union([
  z.object({ kind: z.literal('label'), value: z.string(), ...facts }),
  z.object({ kind: z.literal('number'), value: z.number(), ...facts }),
  z.object({ kind: z.literal('pass'), value: z.boolean(), ...facts }),
  z.object({ kind: z.enum(SCORE_KINDS), unscored: failureSchema, ...facts }),
]);
const usageSchema = z.object({ input: z.number(), output: z.number(), cached: z.number() });
const stageSchema = z.object({
  calls: z.number(),
  cachedCalls: z.number(),
  savedUsd: z.number().optional(),
  batchCalls: z.number().optional(),
  batchSavedUsd: z.number().optional(),
  costUsd: z.number(),
  // Absent in results written before unpriced models were recorded: read as priced.
  unpriced: z.array(z.string()).optional(),
  latencyMs: z.number(),
  usage: usageSchema,
});
const common = {
  runId: z.string(),
  itemId: z.string(),
  row: z.number().int(),
  status: z.enum(['scored', 'failed']),
  gold: z.string().optional(),
  input: z.record(z.string(), z.string()),
  columns: z.record(z.string(), z.string()).optional(),
  annotations: z.array(z.string()).optional(),
  inputDigest: z.string().optional(),
  failure: failureSchema.optional(),
  prompts: z.record(z.string(), z.string()).optional(),
  details: z.record(z.string(), z.unknown()).optional(),
  raw: z.string().optional(),
  injection: z
    .array(z.object({ field: z.string(), sign: z.enum(['answer format', 'verdict', 'instruction']) }))
    .optional(),
  stages: z.record(z.string(), stageSchema),
  simulated: z.boolean(),
  finishedAt: z.string(),
  part: z.number().int().positive().optional(),
};

const resultSchema = z.object({
  schemaVersion: z.literal(RESULT_SCHEMA_VERSION),
  ...common,
  output: z.unknown().optional(),
  scores: z.record(z.string(), scoreSchema),
});

/**
 * Results of version 1 (before task families) were all GEC judgements: one predicted label
 * (`Error` when failed) and its reason. They become the GEC family's `label` score.
 */
const resultV1Schema = z.object({
  ...common,
  prediction: z.string().optional(),
  reason: z.string().optional(),
  score: z.number().optional(),
});

function upgradeResultV1(v1: z.infer<typeof resultV1Schema>): ItemResult {
  const { prediction, reason, score: _score, ...rest } = v1;
  const scored = v1.status === 'scored' && prediction !== undefined;
  return {
    schemaVersion: RESULT_SCHEMA_VERSION,
    ...rest,
    ...(scored ? { output: { label: prediction, reason: reason ?? '' } } : {}),
    scores: scored
      ? { label: { kind: 'label', value: prediction, ...(reason ? { explanation: reason } : {}) } }
      : {},
  };
}

function issues(error: z.ZodError): string {
  return error.issues
    .slice(0, 5)
    .map((i) => `${i.path.join('.') || '(record)'}: ${i.message}`)
    .join('; ');
}

function versionOf(value: unknown): unknown {
  return value !== null && typeof value === 'object'
    ? (value as { schemaVersion?: unknown }).schemaVersion
    : undefined;
}

/** A stored result, checked and upgraded; `where` names it in errors (`results.jsonl line 12`). */
export function decodeResult(value: unknown, where: string): ItemResult {
  const version = versionOf(value);
  if (version === RESULT_SCHEMA_VERSION) {
    const parsed = resultSchema.safeParse(value);
    if (parsed.success) return parsed.data as ItemResult;
    throw new StoredDataError(`${where}: not a result of schema version ${version}: ${issues(parsed.error)}`);
  }
  if (version === undefined) {
    const parsed = resultV1Schema.safeParse(value);
    if (parsed.success) return upgradeResultV1(parsed.data);
    throw new StoredDataError(
      `${where}: not a result (no schemaVersion, nor version 1): ${issues(parsed.error)}`,
    );
  }
  throw new StoredDataError(
    `${where}: result schema version ${JSON.stringify(version)} is newer than this Assay reads (${RESULT_SCHEMA_VERSION}); upgrade Assay`,
  );
}

const runSchema = z.object({
  schemaVersion: z.literal(RESULT_SCHEMA_VERSION).optional(),
  runId: z.string(),
  suiteName: z.string(),
  suite: z.unknown(),
  prompts: z.record(z.string(), z.object({ hash: z.string(), text: z.string() })),
  status: z.enum(['ingesting', 'running', 'aggregating', 'done', 'failed']),
  total: z.number().int().optional(),
  invalidRows: z.number().int(),
  startedAt: z.string(),
  finishedAt: z.string().optional(),
  reportPrefix: z.string(),
  datasetKey: z.string(),
  datasetVersion: z.string().optional(),
  predictions: z.string().optional(),
  simulated: z.boolean(),
});

/**
 * A stored run record, checked; its suite by `checkSuite` (the stores get the full validator
 * from the composition root). A record of version 1
 * (no `schemaVersion`) has the same shape and is upgraded. Keys the record does not know
 * (an adapter's counters) are dropped.
 */
export function decodeRun(
  value: unknown,
  where: string,
  checkSuite: SuiteCheck = checkCommonKeys,
): RunRecord {
  const version = versionOf(value);
  if (version !== undefined && version !== RESULT_SCHEMA_VERSION) {
    throw new StoredDataError(
      `${where}: run record schema version ${JSON.stringify(version)} is not one this Assay reads (${RESULT_SCHEMA_VERSION}); upgrade Assay`,
    );
  }
  const parsed = runSchema.safeParse(value);
  if (!parsed.success) throw new StoredDataError(`${where}: not a run record: ${issues(parsed.error)}`);
  let suite: RunRecord['suite'];
  try {
    suite = checkSuite(parsed.data.suite, `${where} (its suite)`);
  } catch (error) {
    throw new StoredDataError(
      `${where}: the run's suite does not validate with this Assay, so its results cannot be read: ${(error as Error).message}`,
      { cause: error },
    );
  }
  return { ...parsed.data, schemaVersion: RESULT_SCHEMA_VERSION, suite };
}
