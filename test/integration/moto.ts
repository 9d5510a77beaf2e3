/**
 * moto_server for integration tests: the harness lives in cli/cloud/moto.ts (the local cloud
 * uses it too); these are the names the tests use. Start one per test file.
 */
import { type CloudResources, purgeQueues } from '../../cli/cloud/moto.js';

/** Empties every queue of the stack, so one test's leftovers never reach the next. */
export async function resetAllQueues(
  clients: Parameters<typeof purgeQueues>[0],
  { queues }: CloudResources,
): Promise<void> {
  await purgeQueues(clients, [
    queues.events.url,
    queues.items.url,
    queues.itemsDlq.url,
    queues.aggregate.url,
  ]);
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
  startMoto,
  uniqueNames,
} from '../../cli/cloud/moto.js';
