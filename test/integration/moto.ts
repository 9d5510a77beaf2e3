/**
 * moto_server for integration tests: the harness lives in cli/cloud/moto.ts (the local cloud
 * uses it too); these are the names the tests use. Start one per test file.
 */
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
