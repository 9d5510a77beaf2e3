/**
 * The local cloud's containers, driven through the poller against moto with handlers of
 * test/fixtures/containers/: a handler that outlives its timeout, outgrows its memory or fills
 * its /tmp has its container killed and its messages left on the queue; a handler within its
 * limits runs warm in the same container, with its own environment and /tmp. The limits are
 * small and set here; the handlers' own waits (30 s) are far beyond them, so the machine's
 * speed does not matter.
 */
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { CreateQueueCommand, GetQueueAttributesCommand, SendMessageBatchCommand } from '@aws-sdk/client-sqs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type ContainerConfig, ContainerKilledError } from '../../cli/cloud/containers.js';
import { type Invocation, QueuePoller } from '../../cli/cloud/poller.js';
import type { AwsClients } from '../../shared/adapters/aws/clients.js';
import type { Seen } from '../fixtures/containers/reports.js';
import { assayCli, REPO, snapshotEnv, tempDir } from '../helpers.js';
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

afterAll(snapshotEnv());

/** A queue of its own, with messages back 2 s after a receive that did not delete them. */
async function queue(count: number): Promise<{ url: string; arn: string }> {
  const name = `containers-${Math.random().toString(36).slice(2, 10)}`;
  const { QueueUrl } = await clients.sqs.send(
    new CreateQueueCommand({ QueueName: name, Attributes: { VisibilityTimeout: '2' } }),
  );
  const { Attributes } = await clients.sqs.send(
    new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['QueueArn'] }),
  );
  await send(QueueUrl!, count);
  return { url: QueueUrl!, arn: Attributes!.QueueArn! };
}

async function send(url: string, count: number): Promise<void> {
  if (count === 0) return;
  await clients.sqs.send(
    new SendMessageBatchCommand({
      QueueUrl: url,
      Entries: Array.from({ length: count }, (_, i) => ({ Id: `m${i}`, MessageBody: `message ${i}` })),
    }),
  );
}

/**
 * Messages on the queue: received and not deleted (in flight), or visible (again, once the
 * visibility timeout passed: how soon depends on how long the invocation took).
 */
async function onQueue(url: string): Promise<number> {
  const { Attributes = {} } = await clients.sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl: url,
      AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
    }),
  );
  return (
    Number(Attributes.ApproximateNumberOfMessages) + Number(Attributes.ApproximateNumberOfMessagesNotVisible)
  );
}

/** A poller of one container source, `fixture` on `q`; closed after the test. */
function pollerOf(
  q: { url: string; arn: string },
  fixture: string,
  limits: Omit<ContainerConfig, 'module'>,
): QueuePoller {
  const poller = new QueuePoller({
    sqs: clients.sqs,
    region: TEST_REGION,
    sources: [
      {
        functionName: 'fixture',
        queueUrl: q.url,
        queueArn: q.arn,
        batchSize: 10,
        container: {
          module: new URL(`../fixtures/containers/${fixture}.ts`, import.meta.url).href,
          ...limits,
        },
      },
    ],
  });
  pollers.push(poller);
  return poller;
}

/**
 * Polls until an invocation ran (messages come back after the visibility timeout), for as long
 * as the queue holds a message: no deadline a loaded machine could miss.
 */
async function nextInvocation(poller: QueuePoller): Promise<Invocation> {
  while (!(await poller.idle(['fixture']))) {
    const invocation = await poller.pollOnce('fixture');
    if (invocation) return invocation;
    await sleep(250);
  }
  throw new Error('no invocation: the queue holds no message');
}

describe('the local cloud containers', () => {
  it('kill a handler at its timeout, leave its messages on the queue, and start a new container after', async () => {
    const q = await queue(3);
    const poller = pollerOf(q, 'sleeps-past-timeout', { memoryMb: 256, tmpMb: 16, timeoutMs: 1000, env: {} });

    const first = await nextInvocation(poller);

    expect(first.container).toMatchObject({ cold: true, killed: 'timeout' });
    expect(first.error).toBeInstanceOf(ContainerKilledError);
    expect((first.error as Error).message).toBe('Task timed out after 1.00 seconds');
    expect(first).toMatchObject({ records: 3, failed: 3 });
    // Killed at its timeout (counted from the end of the init phase), not after its 30 s sleep.
    const ran = first.durationMs - first.container!.initMs!;
    expect(ran).toBeGreaterThanOrEqual(1000);
    expect(ran).toBeLessThan(20_000);
    expect(await onQueue(q.url)).toBe(3);
    expect(existsSync(first.container!.tmpDir)).toBe(false);

    // The same messages come back after the visibility timeout (a second delivery, which the
    // handler finishes at once), in a container of their own.
    const second = await nextInvocation(poller);

    expect(second).toMatchObject({ records: 3, failed: 0 });
    expect(second.error).toBeUndefined();
    expect(second.container).toMatchObject({ cold: true });
    expect(second.container!.killed).toBeUndefined();
    expect(second.container!.threadId).not.toBe(first.container!.threadId);
    expect(await onQueue(q.url)).toBe(0);
  });

  it('kill a handler that allocates past its memory, with the out-of-memory report', async () => {
    const reports = await tempDir('assay-container-reports-');
    const q = await queue(2);
    const poller = pollerOf(q, 'allocates', {
      memoryMb: 192,
      tmpMb: 16,
      timeoutMs: 60_000,
      env: { REPORT_DIR: reports },
    });

    const invocation = await nextInvocation(poller);

    expect(await readdir(reports)).toEqual(['started']);
    expect(invocation.container).toMatchObject({ killed: 'memory' });
    expect((invocation.error as Error).message).toMatch(
      /^Runtime exited: out of memory \(a heap of 128 MB, the function's 192 MB less the runtime's\)$/,
    );
    expect(invocation).toMatchObject({ records: 2, failed: 2 });
    expect(await onQueue(q.url)).toBe(2);
  });

  it('kill a handler that writes past its /tmp, with the /tmp report, and remove the folder', async () => {
    const q = await queue(1);
    const poller = pollerOf(q, 'fills-tmp', { memoryMb: 256, tmpMb: 4, timeoutMs: 60_000, env: {} });

    const invocation = await nextInvocation(poller);

    expect(invocation.container).toMatchObject({ killed: 'tmp' });
    const message = (invocation.error as Error).message;
    expect(message).toMatch(/^No space left on device: \/tmp holds \d+\.\d MB of 4 MB$/);
    expect(Number(/holds (\S+) MB/.exec(message)![1])).toBeGreaterThan(4);
    // Killed while it ran (the periodic measure), not at the end of its 30 s wait.
    expect(invocation.durationMs - invocation.container!.initMs!).toBeLessThan(20_000);
    expect(invocation).toMatchObject({ records: 1, failed: 1 });
    expect(await onQueue(q.url)).toBe(1);
    const { tmpDir } = invocation.container!;
    expect(dirname(dirname(tmpDir))).toBe(tmpdir());
    expect(existsSync(tmpDir)).toBe(false);
  });

  it('run a handler within its limits warm: the same thread, its own environment and /tmp, records deleted', async () => {
    const reports = await tempDir('assay-container-reports-');
    process.env.ASSAY_PARENT_ONLY = 'this process only';
    const q = await queue(1);
    const poller = pollerOf(q, 'reports', {
      memoryMb: 256,
      tmpMb: 16,
      timeoutMs: 10_000,
      env: { REPORT_DIR: reports, ASSAY_GIVEN: 'given' },
    });

    const first = await nextInvocation(poller);
    await send(q.url, 1);
    const second = await nextInvocation(poller);

    for (const invocation of [first, second]) {
      expect(invocation).toMatchObject({ records: 1, failed: 0 });
      expect(invocation.error).toBeUndefined();
      expect(invocation.container!.killed).toBeUndefined();
    }
    expect(first.container!.cold).toBe(true);
    expect(second.container!.cold).toBe(false);
    expect(second.container!.threadId).toBe(first.container!.threadId);
    expect(await onQueue(q.url)).toBe(0);

    const seen = await Promise.all(
      (await readdir(reports)).map(
        async (file) => JSON.parse(await readFile(join(reports, file), 'utf8')) as Seen,
      ),
    );
    seen.sort((a, b) => a.invocations - b.invocations);
    expect(seen.map((s) => s.invocations)).toEqual([1, 2]);
    const { tmpDir, threadId } = first.container!;
    for (const s of seen) {
      expect(s).toMatchObject({
        threadId,
        TMPDIR: tmpDir,
        tmpdir: tmpDir,
        given: 'given',
        memoryLimitInMB: '256',
        records: 1,
      });
      expect(s.parentOnly).toBeUndefined();
      expect(s.remainingMs).toBeGreaterThan(0);
      expect(s.remainingMs).toBeLessThanOrEqual(10_000);
    }
    // /tmp survives between invocations of a warm container.
    expect(seen[0]!.tmpFiles).toEqual([]);
    expect(seen[1]!.tmpFiles).toEqual([`left-by-${seen[0]!.requestId}`]);

    await poller.close();
    // The folder goes with the container.
    expect(existsSync(tmpDir)).toBe(false);
  });

  it('start from the built CLI (dist/), as the installed package runs them', async () => {
    const dir = await tempDir('assay-containers-dist-');
    const suite = join(REPO, 'examples', 'reply-tone.suite.json');

    // bin/assay.mjs runs dist/main.js, whose containers start dist/container.js.
    const { stderr } = await assayCli(['cloud', suite, '--simulate', '--out', join(dir, 'out')], dir);

    expect(stderr).toMatch(
      /^ {2}worker +\d+ records ok \(\d+ ms, cold start, init \d+ ms, max memory \d+ MB\)$/m,
    );
    expect(stderr).not.toMatch(/container (killed|exited)/);
    const report = JSON.parse(await readFile(join(dir, 'out', 'report.json'), 'utf8'));
    expect(report).toMatchObject({ counts: { items: 48, scored: 48 } });
  });
});
