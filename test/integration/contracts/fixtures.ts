/**
 * What the contract suites share: one moto stack per file (each a table, a bucket and queues
 * of its own), and the records the stores are fed.
 */
import { afterAll, beforeAll } from 'vitest';
import type { AwsClients } from '../../../shared/adapters/aws/clients.js';
import type { ItemResult, RunRecord } from '../../../shared/model/model.js';
import { suite } from '../../helpers.js';
import {
  createTestResources,
  type Moto,
  motoClients,
  startMoto,
  type TestResources,
  uniqueNames,
} from '../moto.js';

export interface AwsStack {
  clients: AwsClients;
  res: TestResources;
}

/** Starts (or joins) the worker's moto_server and creates a stack for this file; read it in tests. */
export function awsStack(name: string): () => AwsStack {
  let moto: Moto | undefined;
  let stack: AwsStack | undefined;
  beforeAll(async () => {
    moto = await startMoto();
    const clients = motoClients(moto.endpoint);
    stack = { clients, res: await createTestResources(clients, uniqueNames(name)) };
  }, 120_000);
  afterAll(async () => {
    for (const client of Object.values(stack?.clients ?? {})) client.destroy();
    await moto?.stop();
  });
  return () => {
    if (!stack) throw new Error('the moto stack is not up yet');
    return stack;
  };
}

/** A different id each call, so tests sharing a table never meet. */
let counter = 0;
export const fresh = (prefix: string) => `${prefix}-${process.pid}-${++counter}`;

const demoSuite = suite({ name: 'demo', dataset: { path: 'datasets/demo/data.csv' } });

export function runRecord(runId: string, overrides: Partial<RunRecord> = {}): RunRecord {
  return {
    schemaVersion: 2,
    runId,
    suiteName: 'demo',
    suite: demoSuite,
    prompts: { 'gec/baseline.md': { hash: 'abc123', text: 'Judge {{src}} → {{tgt}}' } },
    status: 'ingesting',
    invalidRows: 0,
    startedAt: '2025-01-01T00:00:00.000Z',
    reportPrefix: `reports/demo/${runId}/`,
    datasetKey: 'datasets/demo/data.csv',
    simulated: true,
    ...overrides,
  };
}

export function result(runId: string, itemId: string, overrides: Partial<ItemResult> = {}): ItemResult {
  return {
    schemaVersion: 2,
    runId,
    itemId,
    row: 1,
    status: 'scored',
    gold: 'TP',
    output: { label: 'TP', reason: 'fixes it', decidedBy: 'sim:gold' },
    scores: { label: { kind: 'label', value: 'TP', decidedBy: 'sim:gold' } },
    input: { src: 'a', tgt: 'b' },
    stages: {
      classify: {
        calls: 1,
        cachedCalls: 0,
        costUsd: 0.0001,
        latencyMs: 12,
        usage: { input: 10, output: 2, cached: 0 },
      },
    },
    simulated: true,
    finishedAt: '2025-01-01T00:01:00.000Z',
    ...overrides,
  };
}

/** A `budget` failure: the run's budget stopped the item before it was scored. */
export function budgetFailure(runId: string, itemId: string): ItemResult {
  return result(runId, itemId, {
    status: 'failed',
    scores: {},
    output: undefined,
    failure: { kind: 'budget', message: 'budget spent' },
    stages: {},
  });
}

export async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}
