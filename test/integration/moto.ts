/**
 * moto_server for integration tests: the harness lives in cli/cloud/moto.ts (the local cloud
 * uses it too); these are the names the tests use.
 */
import {
  DeleteMessageBatchCommand,
  type Message,
  ReceiveMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { inject } from 'vitest';
import {
  type CloudResources,
  type Moto,
  purgeQueues,
  startMoto as startOwnMoto,
} from '../../cli/cloud/moto.js';

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

/** Receives until `count` messages arrived or `timeoutMs` passed; deletes what it received. */
export async function receive(
  sqs: SQSClient,
  queueUrl: string,
  count: number,
  timeoutMs = 15_000,
): Promise<Message[]> {
  const messages: Message[] = [];
  const deadline = Date.now() + timeoutMs;
  while (messages.length < count && Date.now() < deadline) {
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
    }
  }
  return messages;
}
