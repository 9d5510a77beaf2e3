/**
 * moto_server for integration tests: the harness lives in cli/cloud/moto.ts (the local cloud
 * uses it too); these are the names the tests use.
 */
import {
  DeleteMessageBatchCommand,
  GetQueueAttributesCommand,
  type Message,
  ReceiveMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { inject } from 'vitest';
import {
  type CloudResourceOptions,
  type CloudResources,
  createCloudResources,
  functionEnv,
  type Moto,
  motoClients,
  purgeQueues,
  startMoto as startOwnMoto,
  uniqueNames,
} from '../../cli/cloud/moto.js';
import type { AwsClients } from '../../shared/adapters/aws/clients.js';

/**
 * The moto_server of this test worker, started once for the run (./moto-global-setup.ts);
 * its `stop()` leaves it running for the next file. Outside that setup, a server of its own.
 */
export async function startMoto(): Promise<Moto> {
  const endpoints = inject('motoEndpoints') ?? [];
  if (endpoints.length === 0) return startOwnMoto();
  const worker = Math.max(1, Number(process.env.VITEST_POOL_ID) || 1);
  return { endpoint: endpoints[(worker - 1) % endpoints.length]!, stop: async () => {} };
}

/** A test file's moto server, the clients on it and the stack of resources it made there. */
export interface TestStack {
  moto: Moto;
  clients: AwsClients;
  res: CloudResources;
}

/** Starts (or joins) this worker's moto server and makes a fresh stack named after `prefix`. */
export async function startTestStack(prefix: string, options?: CloudResourceOptions): Promise<TestStack> {
  const moto = await startMoto();
  const clients = motoClients(moto.endpoint);
  try {
    const res = await createCloudResources(clients, uniqueNames(prefix), options);
    return { moto, clients, res };
  } catch (error) {
    for (const client of Object.values(clients)) client.destroy();
    await moto.stop();
    throw error;
  }
}

/**
 * The environment the functions read on the stack, as `assay cloud` sets it, with Powertools
 * quiet: its logs silent unless POWERTOOLS_LOG_LEVEL says otherwise, no metrics.
 */
export function quietFunctionEnv({ moto, res }: TestStack): Record<string, string> {
  return {
    ...functionEnv(moto.endpoint, res),
    POWERTOOLS_LOG_LEVEL: process.env.POWERTOOLS_LOG_LEVEL ?? 'SILENT',
    POWERTOOLS_METRICS_DISABLED: 'true',
  };
}

/** Closes the stack's clients and lets go of its server; a stack that never started is skipped. */
export async function stopTestStack(stack: TestStack | undefined): Promise<void> {
  if (!stack) return;
  for (const client of Object.values(stack.clients)) client.destroy();
  await stack.moto.stop();
}

/** Empties every queue of the stack, so one test's leftovers never reach the next. */
export async function resetAllQueues(
  clients: Parameters<typeof purgeQueues>[0],
  { queues }: CloudResources,
): Promise<void> {
  await purgeQueues(
    clients,
    Object.values(queues).map((queue) => queue.url),
  );
}

export {
  type CloudResourceOptions as TestResourceOptions,
  type CloudResources as TestResources,
  createCloudResources as createTestResources,
  functionEnv,
  MOTO_CREDENTIALS as TEST_CREDENTIALS,
  MOTO_REGION as TEST_REGION,
  type Moto,
  motoClients,
  NOTIFIED_PREFIXES,
  purgeQueues as resetQueues,
  type QueueRef,
  type ResourceNames as TestResourceNames,
  uniqueNames,
} from '../../cli/cloud/moto.js';

/**
 * Receives until `count` messages arrived, or the queue holds none (visible, in flight or
 * delayed): a message sent before the call is received however slowly the machine runs, and a
 * queue with nothing more to give ends the wait at once, with no deadline. Deletes what it received.
 */
export async function receive(sqs: SQSClient, queueUrl: string, count: number): Promise<Message[]> {
  const messages: Message[] = [];
  while (messages.length < count) {
    const out = await sqs.send(
      new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }),
    );
    const batch = out.Messages ?? [];
    messages.push(...batch);
    if (batch.length > 0) {
      await sqs.send(
        new DeleteMessageBatchCommand({
          QueueUrl: queueUrl,
          Entries: batch.map((m, i) => ({ Id: `d${i}`, ReceiptHandle: m.ReceiptHandle! })),
        }),
      );
    } else if ((await messagesIn(sqs, queueUrl)) === 0) break;
  }
  return messages;
}

/** Every message the queue holds: visible, in flight and delayed. */
async function messagesIn(sqs: SQSClient, queueUrl: string): Promise<number> {
  const { Attributes = {} } = await sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl: queueUrl,
      AttributeNames: [
        'ApproximateNumberOfMessages',
        'ApproximateNumberOfMessagesNotVisible',
        'ApproximateNumberOfMessagesDelayed',
      ],
    }),
  );
  return (
    Number(Attributes.ApproximateNumberOfMessages ?? 0) +
    Number(Attributes.ApproximateNumberOfMessagesNotVisible ?? 0) +
    Number(Attributes.ApproximateNumberOfMessagesDelayed ?? 0)
  );
}
