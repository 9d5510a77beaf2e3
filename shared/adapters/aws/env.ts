import { GetSecretValueCommand, type SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { z } from 'zod';
import { FUNCTION_TIMEOUT_SECONDS, INGEST_CHUNK_BYTES } from '../../lib/layout/queues.js';
import { ConfigError } from '../../model/errors.js';

/** The Lambda environment is wrong or incomplete, or the provider secret is unusable: a {@link ConfigError}. */
export { ConfigError };

/** Empty strings count as unset: CloudFormation and shells both produce them for "nothing". */
const optionalString = z.string().min(1).optional();

export const awsEnvSchema = z.object({
  BUCKET_NAME: z.string().min(1),
  TABLE_NAME: z.string().min(1),
  ITEMS_QUEUE_URL: z.url(),
  AGGREGATE_QUEUE_URL: z.url(),
  /** Ingest only: where it sends itself the next chunk of a dataset read a chunk at a time. */
  EVENTS_QUEUE_URL: z.url(),
  /** Secrets Manager secret whose SecretString is a JSON object of provider API keys. */
  PROVIDER_SECRET_ARN: optionalString,
  ASSAY_CACHE_TTL_DAYS: z.coerce.number().positive().default(30),
  /** Days after which the items a run writes to the table expire (by the table's `ttl`); 0: kept. */
  ASSAY_RESULT_TTL_DAYS: z.coerce.number().int().nonnegative().default(0),
  /**
   * Bytes of a dataset one ingest invocation reads (a larger dataset is read a chunk at a time,
   * an invocation each); default the layout's `INGEST_CHUNK_BYTES`. Tests set a small one.
   */
  ASSAY_INGEST_CHUNK_BYTES: z.coerce.number().int().positive().default(INGEST_CHUNK_BYTES),
  /** Ingest: the most item ids one invocation claims a second (the deployment's pace over its concurrency); 0: unpaced. */
  ASSAY_INGEST_CLAIMS_PER_SECOND: z.coerce.number().nonnegative().default(0),
  /** The most read units a second one invocation's reads of results take (aggregate's share of the deployment's pace); 0: unpaced. */
  ASSAY_RESULT_READ_UNITS_PER_SECOND: z.coerce.number().nonnegative().default(0),
  /**
   * How long an aggregation holds its run, ms: a run left `aggregating` by an aggregation that
   * died is claimed again by the next trigger after this (its own trigger comes back after the
   * queue's visibility timeout, longer than this). Default: the aggregate function's timeout
   * and a minute. Tests set a short one.
   */
  ASSAY_AGGREGATION_LEASE_MS: z.coerce
    .number()
    .int()
    .positive()
    .default((FUNCTION_TIMEOUT_SECONDS.aggregate + 60) * 1000),
  /**
   * A run of more parts than one and at least this many results is aggregated a part at a
   * time (see use-cases/aggregate-parts.ts); a smaller one in one pass. Tests set 0.
   */
  ASSAY_AGGREGATE_IN_PARTS_FROM: z.coerce.number().int().nonnegative().default(50_000),
  /**
   * Ingest: folders under `datasets/` every suite may read besides its own
   * `datasets/<name>/`, comma-separated (`datasets/shared/`); unset, none. Checked by
   * `parseDatasetPrefixes` (shared/lib/layout/suite-paths.ts).
   */
  ASSAY_DATASET_PREFIXES: optionalString,
  /** The watchdog reports a run stuck once its progress has not moved for this long, ms (default an hour). */
  ASSAY_STUCK_AFTER_MS: z.coerce.number().int().positive().default(3_600_000),
  /** Set for moto_server / LocalStack; unset on AWS. */
  AWS_ENDPOINT_URL: z.url().optional(),
});
export type AwsEnv = z.infer<typeof awsEnvSchema>;

export type QueueVariable = 'ITEMS_QUEUE_URL' | 'AGGREGATE_QUEUE_URL' | 'EVENTS_QUEUE_URL';
const QUEUE_VARIABLES: readonly QueueVariable[] = [
  'ITEMS_QUEUE_URL',
  'AGGREGATE_QUEUE_URL',
  'EVENTS_QUEUE_URL',
];

/** What one function reads: the common variables plus the queue URLs it sends to. */
export type FunctionEnv<Q extends QueueVariable> = Omit<AwsEnv, QueueVariable> & Pick<AwsEnv, Q>;

/**
 * Parses the Lambda environment of a function that sends to `queues` (the stack sets only
 * those queue URLs on it). Call once at module load (the composition root), so a bad
 * deployment fails at cold start and the error names every missing or invalid variable.
 */
export function parseFunctionEnv<Q extends QueueVariable>(
  queues: readonly Q[],
  env: NodeJS.ProcessEnv = process.env,
): FunctionEnv<Q> {
  const unused: Partial<Record<QueueVariable, true>> = {};
  for (const name of QUEUE_VARIABLES) if (!(queues as readonly string[]).includes(name)) unused[name] = true;
  const schema = awsEnvSchema.omit(unused);
  const present = Object.fromEntries(
    Object.keys(schema.shape)
      .filter((name) => env[name] !== undefined && env[name] !== '')
      .map((name) => [name, env[name]]),
  );
  const parsed = schema.safeParse(present);
  if (parsed.success) return parsed.data as unknown as FunctionEnv<Q>;
  const problems = parsed.error.issues.map((issue) => {
    const name = String(issue.path[0]);
    return name in present ? `${name} is invalid (${issue.message})` : `${name} is not set`;
  });
  throw new ConfigError(`Environment: ${problems.join('; ')}`, { cause: parsed.error });
}

const providerSecretsSchema = z.record(z.string(), z.string());

/**
 * Reads the provider API keys: a secret whose SecretString is a JSON object such as
 * `{"OPENAI_API_KEY": "...", "ANTHROPIC_API_KEY": "..."}`. Call once per cold start.
 */
export async function loadProviderSecrets(
  client: SecretsManagerClient,
  arn: string,
): Promise<Record<string, string>> {
  const out = await client.send(new GetSecretValueCommand({ SecretId: arn }));
  if (out.SecretString === undefined) {
    throw new ConfigError(`secret ${arn} has no SecretString (binary secrets are not supported)`);
  }
  let json: unknown;
  try {
    json = JSON.parse(out.SecretString);
  } catch (err) {
    // Not the parser's error as the cause: its message quotes the input, which is the secret.
    const at = err instanceof SyntaxError ? / at position (\d+)/.exec(err.message)?.[1] : undefined;
    throw new ConfigError(
      `secret ${arn} is not JSON (expected an object of provider keys)${at === undefined ? '' : `: invalid at character ${at}`}`,
    );
  }
  const parsed = providerSecretsSchema.safeParse(json);
  if (!parsed.success) {
    // Never echo the value: it is a secret.
    throw new ConfigError(`secret ${arn} must be a JSON object of string values`, { cause: parsed.error });
  }
  return parsed.data;
}
