/**
 * The AggregateTrigger contract (and StepTrigger's, which the same adapters keep): every request
 * to aggregate a run, a sweep or a step of a run aggregated in parts reaches whoever aggregates,
 * saying which it names; asking twice is harmless (aggregation is
 * claimed), so only what arrives is compared, as a set. By the local shell's in-process queue
 * (taken by the runner) and by SQS (read back as the aggregate function reads it) alike.
 */
import { describe, expect, it } from 'vitest';
import {
  aggregateTriggerBodySchema,
  SqsAggregateTrigger,
} from '../../../shared/adapters/aws/sqs-aggregate-trigger.js';
import {
  type AggregateRequest,
  LocalAggregateTrigger,
} from '../../../shared/adapters/local/local-aggregate-trigger.js';
import type { AggregateTrigger, StepTrigger } from '../../../shared/ports/ports.js';
import { receive, resetQueues } from '../moto.js';
import { awsStack, fresh } from './fixtures.js';

const aws = awsStack('contract-trigger');

interface Harness {
  trigger: AggregateTrigger & StepTrigger;
  /** The requests the aggregating side gets, until `count` arrived or none comes. */
  drain(count: number): Promise<AggregateRequest[]>;
}

const adapters: [string, () => Promise<Harness>][] = [
  [
    'local',
    async () => {
      const trigger = new LocalAggregateTrigger();
      return { trigger, drain: async () => trigger.take() };
    },
  ],
  [
    'sqs',
    async () => {
      const { clients, res } = aws();
      await resetQueues(clients, [res.queues.aggregate.url]);
      return {
        trigger: new SqsAggregateTrigger({ client: clients.sqs, queueUrl: res.queues.aggregate.url }),
        async drain(count) {
          const received = await receive(clients.sqs, res.queues.aggregate.url, count);
          return received.map((m) => aggregateTriggerBodySchema.parse(JSON.parse(m.Body!)));
        },
      };
    },
  ],
];

const key = (request: AggregateRequest) => {
  if ('sweepId' in request) return `sweep ${request.sweepId}`;
  if ('step' in request)
    return `step ${request.step}${'part' in request ? request.part : ''} of ${request.runId}`;
  return `run ${request.runId}`;
};

describe.each(adapters)('AggregateTrigger contract: %s', { timeout: 60_000 }, (_name, make) => {
  it('delivers every run and sweep request, each naming what it asks for', async () => {
    const { trigger, drain } = await make();
    const [a, b, s] = [fresh('run'), fresh('run'), fresh('sweep')];
    await trigger.trigger(a);
    await trigger.triggerSweep(s);
    await trigger.trigger(b);
    const got = await drain(3);
    expect(new Set(got.map(key))).toEqual(new Set([`run ${a}`, `sweep ${s}`, `run ${b}`]));
    // A run id and a sweep id are never confused, even when they are the same string.
    const same = fresh('same');
    await trigger.trigger(same);
    await trigger.triggerSweep(same);
    expect(new Set((await drain(2)).map(key))).toEqual(new Set([`run ${same}`, `sweep ${same}`]));
  });

  it("delivers each step of a run aggregated in parts, with its part, apart from the run's own request", async () => {
    const { trigger, drain } = await make();
    const runId = fresh('steps');
    await trigger.trigger(runId);
    await trigger.triggerStep({ runId, step: 'tally', part: 0 });
    await trigger.triggerStep({ runId, step: 'tally', part: 7 });
    await trigger.triggerStep({ runId, step: 'reduce' });
    await trigger.triggerStep({ runId, step: 'files', part: 7 });
    await trigger.triggerStep({ runId, step: 'assemble' });
    expect(new Set((await drain(6)).map(key))).toEqual(
      new Set([
        `run ${runId}`,
        `step tally0 of ${runId}`,
        `step tally7 of ${runId}`,
        `step reduce of ${runId}`,
        `step files7 of ${runId}`,
        `step assemble of ${runId}`,
      ]),
    );
  });

  it('asked twice, the request arrives (at least once); once taken, it is not delivered again', async () => {
    const { trigger, drain } = await make();
    const runId = fresh('run');
    await trigger.trigger(runId);
    await trigger.trigger(runId);
    const got = await drain(2);
    expect(got.length).toBeGreaterThanOrEqual(1);
    expect(new Set(got.map(key))).toEqual(new Set([`run ${runId}`]));
    expect(await drain(1)).toEqual([]);
  });
});
