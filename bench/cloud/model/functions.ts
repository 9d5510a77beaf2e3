/**
 * The stack's six functions as the model builds them: each container's handler through the
 * function's factory, with a composition root of its own (the environment deployment.ts reads
 * from the stack, and SDK clients of its own).
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import type { Metrics } from '@aws-lambda-powertools/metrics';
import type { FunctionName } from '../../../shared/lib/layout/queues.js';
import type { FunctionDefinition, Handler } from './fleet.js';

/** The functions' factories, and the module-wide logger and metrics of their composition root. */
export interface LoadedFunctions {
  definitions: Record<FunctionName, FunctionDefinition>;
  shared: { logger: Logger; metrics: Metrics };
}

let loaded: Promise<LoadedFunctions> | undefined;

/**
 * Imports the handlers' modules once per process. Each module also builds the default handler
 * of its own process at import (`export const handler = …`), whose root parses the process's
 * environment: a placeholder environment is set for that moment (nothing is ever sent with the
 * clients it builds) and put back after.
 */
export function loadFunctions(): Promise<LoadedFunctions> {
  loaded ??= withEnv(PLACEHOLDER_ENV, async () => {
    const [root, ingest, worker, deadLetter, aggregate, batchPoller, watchdog] = await Promise.all([
      import('../../../functions/root.js'),
      import('../../../functions/ingest.js'),
      import('../../../functions/worker.js'),
      import('../../../functions/dead-letter.js'),
      import('../../../functions/aggregate.js'),
      import('../../../functions/batch-poller.js'),
      import('../../../functions/watchdog.js'),
    ]);
    const definition = (name: FunctionName, entry: string, build: FunctionDefinition['build']) => ({
      name,
      entry,
      build,
    });
    // Scheduled functions take the EventBridge event and ignore it.
    const scheduled =
      (handler: () => Promise<unknown>): Handler =>
      () =>
        handler();
    return {
      definitions: {
        ingest: definition(
          'ingest',
          'ingest',
          (o) => ingest.createIngestHandler(root.ingestRoot(o)) as Handler,
        ),
        worker: definition(
          'worker',
          'worker',
          (o) => worker.createWorkerHandler(root.workerRoot(o)) as Handler,
        ),
        deadLetter: definition(
          'deadLetter',
          'dead-letter',
          (o) => deadLetter.createDeadLetterHandler(root.deadLetterRoot(o)) as Handler,
        ),
        aggregate: definition(
          'aggregate',
          'aggregate',
          (o) => aggregate.createAggregateHandler(root.aggregateRoot(o)) as Handler,
        ),
        batchPoller: definition('batchPoller', 'batch-poller', (o) =>
          scheduled(batchPoller.createBatchPollerHandler(root.batchPollerRoot(o))),
        ),
        watchdog: definition('watchdog', 'watchdog', (o) =>
          scheduled(watchdog.createWatchdogHandler(root.watchdogRoot(o))),
        ),
      },
      shared: { logger: root.logger, metrics: root.metrics },
    };
  });
  return loaded;
}

const PLACEHOLDER_QUEUE = 'https://sqs.us-east-1.amazonaws.com/123456789012/placeholder';
const PLACEHOLDER_ENV: Record<string, string> = {
  BUCKET_NAME: 'placeholder',
  TABLE_NAME: 'placeholder',
  ITEMS_QUEUE_URL: PLACEHOLDER_QUEUE,
  AGGREGATE_QUEUE_URL: PLACEHOLDER_QUEUE,
  EVENTS_QUEUE_URL: PLACEHOLDER_QUEUE,
  AWS_REGION: 'us-east-1',
  POWERTOOLS_SERVICE_NAME: 'assay',
  POWERTOOLS_METRICS_NAMESPACE: 'Assay',
  AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
};

/** Runs `fn` with `vars` set in the process's environment, then puts the environment back. */
export async function withEnv<T>(vars: Record<string, string>, fn: () => Promise<T>): Promise<T> {
  const before = Object.fromEntries(Object.keys(vars).map((name) => [name, process.env[name]]));
  Object.assign(process.env, vars);
  try {
    return await fn();
  } finally {
    for (const [name, value] of Object.entries(before)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  }
}
