/**
 * The local cloud's containers count memory outside the JS heap, as Lambda counts the whole
 * process: a handler that grows WebAssembly memory (what a Parquet decompressor does for the
 * page size a header declares) past its function's memory is ended as out of memory, though
 * its JS heap stays small; one within it says the most it held, outside memory included.
 */
import { CreateQueueCommand, GetQueueAttributesCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { MEMORY_CHECK_MS } from '../../cli/cloud/containers.js';
import { type Invocation, QueuePoller } from '../../cli/cloud/poller.js';
import type { AwsClients } from '../../shared/adapters/aws/clients.js';
import { type Moto, motoClients, startMoto, TEST_REGION } from './moto.js';

let moto: Moto;
let clients: AwsClients;
const pollers: QueuePoller[] = [];

beforeAll(async () => {
  moto = await startMoto();
  clients = motoClients(moto.endpoint);
});

afterEach(async () => {
  await Promise.all(pollers.splice(0).map((poller) => poller.close()));
});

afterAll(async () => {
  for (const client of Object.values(clients)) client.destroy();
  await moto.stop();
});

/** One invocation of the fixture in a container of `memoryMb`, growing `growMb` outside its heap. */
async function invokeGrowing(memoryMb: number, growMb: number): Promise<Invocation> {
  const name = `outside-heap-${Math.random().toString(36).slice(2, 10)}`;
  const { QueueUrl } = await clients.sqs.send(
    new CreateQueueCommand({ QueueName: name, Attributes: { VisibilityTimeout: '30' } }),
  );
  const { Attributes } = await clients.sqs.send(
    new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['QueueArn'] }),
  );
  await clients.sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: 'grow' }));
  const poller = new QueuePoller({
    sqs: clients.sqs,
    region: TEST_REGION,
    sources: [
      {
        functionName: 'fixture',
        queueUrl: QueueUrl!,
        queueArn: Attributes!.QueueArn!,
        batchSize: 1,
        container: {
          module: new URL('../fixtures/containers/grows-outside-heap.ts', import.meta.url).href,
          memoryMb,
          tmpMb: 16,
          timeoutMs: 60_000,
          // Held long enough for the container to measure it while the invocation runs.
          env: { GROW_MB: String(growMb), HOLD_MS: String(10 * MEMORY_CHECK_MS) },
        },
      },
    ],
  });
  pollers.push(poller);
  // For as long as the queue holds a message: no deadline a loaded machine could miss.
  while (!(await poller.idle(['fixture']))) {
    const invocation = await poller.pollOnce('fixture');
    if (invocation) return invocation;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error('no invocation: the queue holds no message');
}

describe('local cloud containers: memory outside the JS heap', { timeout: 120_000 }, () => {
  it('ends a container whose WebAssembly memory passes its function memory, as out of memory', async () => {
    const invocation = await invokeGrowing(192, 400);

    expect(invocation.container).toMatchObject({ killed: 'memory' });
    expect((invocation.error as Error).message).toMatch(
      /^Runtime exited: out of memory \(\d+ MB used of the function's 192 MB, (\d+) MB of it outside the JS heap\)$/,
    );
    const outside = Number(/(\d+) MB of it outside/.exec((invocation.error as Error).message)![1]);
    expect(outside).toBeGreaterThanOrEqual(400);
  });

  it('says the most a container held, outside the heap included, when it stays within its memory', async () => {
    const invocation = await invokeGrowing(512, 200);

    expect(invocation.error).toBeUndefined();
    expect(invocation.container?.killed).toBeUndefined();
    expect(invocation.container?.maxMemoryMb).toBeGreaterThanOrEqual(200);
    expect(invocation.container?.maxMemoryMb).toBeLessThan(512);
  });
});
