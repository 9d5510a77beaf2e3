/**
 * The pipeline on moto that the end-to-end integration tests drive: one stack per file, the
 * real handlers imported into the test process and a poller running them on the stack's queues.
 */
import { afterAll, beforeAll } from 'vitest';
import {
  type CloudFunctions,
  eventSources,
  loadFunctions,
  uploadFolder,
} from '../../cli/cloud/local-cloud.js';
import { type Invocation, QueuePoller } from '../../cli/cloud/poller.js';
import { DynamoRunStore } from '../../shared/adapters/aws/dynamo-run-store.js';
import { S3BlobStore } from '../../shared/adapters/aws/s3-blob-store.js';
import { PROMPT_PREFIX } from '../../shared/lib/layout/bucket.js';
import { snapshotEnv } from '../helpers.js';
import {
  quietFunctionEnv,
  startTestStack,
  stopTestStack,
  TEST_REGION,
  type TestResourceOptions,
  type TestStack,
} from './moto.js';

export interface PipelineStackOptions {
  /**
   * Environment the functions read besides the stack's own; a function is called when the stack
   * is up, for values known only then (e.g. a fake started in an earlier beforeAll).
   */
  env?: NodeJS.ProcessEnv | (() => NodeJS.ProcessEnv);
  /** Removes every `*_API_KEY` from the environment first, so no call can reach a real vendor. */
  withoutApiKeys?: boolean;
  /** How the stack's resources are made (visibility timeouts, receive counts). */
  resources?: TestResourceOptions;
  /** Records per worker invocation; default the layout's. */
  workerBatchSize?: number;
  /** Worker invocations at once; default 4. */
  workerConcurrency?: number;
  /** Ingest invocations at once; default one. */
  ingestConcurrency?: number;
  /** What the poller invokes instead of the loaded functions (the stack's `functions` stay as loaded). */
  wrap?: (functions: CloudFunctions) => CloudFunctions;
  /** Folders uploaded under prompts/, the ingest queue then drained of the uploads' notifications. */
  prompts?: string[];
}

export interface PipelineStack extends TestStack {
  /** The handlers as loaded. */
  functions: CloudFunctions;
  poller: QueuePoller;
  blobs: S3BlobStore;
  /** The stack's run store, with the bucket for results too large for their item. */
  runStore: DynamoRunStore;
  /** Every invocation the poller has made, in order. */
  invocations: Invocation[];
}

/**
 * Registers the file's beforeAll and afterAll: starts (or joins) the worker's moto_server, makes
 * a stack named after `name`, sets the environment the functions read (Powertools quiet), loads
 * the functions, builds a poller over the stack's event sources that records each invocation, a
 * blob store and a run store on the stack, and uploads `options.prompts`. afterAll closes the
 * clients, lets go of the server and puts the environment back. Read the stack in tests.
 */
export function pipelineStack(name: string, options: PipelineStackOptions = {}): () => PipelineStack {
  const restoreEnv = snapshotEnv();
  let base: TestStack | undefined;
  let stack: PipelineStack | undefined;
  beforeAll(async () => {
    base = await startTestStack(name, options.resources);
    const { clients, res } = base;
    if (options.withoutApiKeys) {
      for (const key of Object.keys(process.env)) if (key.endsWith('_API_KEY')) delete process.env[key];
    }
    const env = typeof options.env === 'function' ? options.env() : options.env;
    Object.assign(process.env, quietFunctionEnv(base), env);
    const functions = await loadFunctions();
    const invocations: Invocation[] = [];
    const sources = eventSources(res, options.wrap ? options.wrap(functions) : functions, {
      workerBatchSize: options.workerBatchSize,
      workerConcurrency: options.workerConcurrency,
    }).map((source) =>
      source.functionName === 'ingest' && options.ingestConcurrency
        ? { ...source, concurrency: options.ingestConcurrency }
        : source,
    );
    const poller = new QueuePoller({
      sqs: clients.sqs,
      region: TEST_REGION,
      sources,
      onInvocation: (invocation) => invocations.push(invocation),
    });
    const blobs = new S3BlobStore({ client: clients.s3, bucket: res.bucket });
    const runStore = new DynamoRunStore({ client: clients.doc, tableName: res.table, blobs });
    for (const folder of options.prompts ?? []) await uploadFolder(blobs, folder, PROMPT_PREFIX);
    if (options.prompts?.length) await poller.drain({ only: ['ingest'] });
    stack = { ...base, functions, poller, blobs, runStore, invocations };
  }, 120_000);
  afterAll(async () => {
    await stopTestStack(base);
    restoreEnv();
  });
  return () => {
    if (!stack) throw new Error('the pipeline stack is not up yet');
    return stack;
  };
}
