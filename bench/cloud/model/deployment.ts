/**
 * The deployment as the stack declares it: the CDK app is built and synthesized in this process
 * (asset bundling skipped through CDK's own switch, as `cdk ls` does; infra/cdk.json's flags),
 * and read back from the template: each function's memory, timeout, /tmp and environment
 * variables, each event source mapping's queue, batch size and maximum concurrency, each
 * schedule's rate. Nothing about the wiring is restated here, so the model runs what a deploy
 * would, with `workerMaxConcurrency` the one setting changed from the defaults (infra/config.ts).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CloudResources, QueueKey } from '../../../cli/cloud/moto.js';
import type { FunctionName } from '../../../shared/lib/layout/queues.js';
import { ROOT } from '../../parts/data.js';

/** A variable's value in the template: a literal, or a reference to a resource of the stack. */
type TemplateValue = string | { ref: 'bucket' | 'table' | 'secret' } | { ref: 'queue'; queue: QueueKey };

export interface DeployedFunction {
  memoryMb: number;
  timeoutS: number;
  tmpMb: number;
  env: Record<string, TemplateValue>;
}

export interface Deployment {
  functions: Record<FunctionName, DeployedFunction>;
  /** Queue → function mappings: the queue, records per invocation, maximum concurrency. */
  mappings: { fn: FunctionName; queue: QueueKey; batchSize: number; maxConcurrency: number }[];
  schedules: { fn: FunctionName; periodMs: number }[];
  /** The deploy settings used (infra/config.ts defaults, the worker's concurrency set). */
  config: Record<string, unknown>;
}

type Resource = { Type: string; Properties?: Record<string, unknown> };

/** Builds the stack with the stack's defaults and `workerMaxConcurrency`, and reads its template. */
export async function synthesizeDeployment(workerMaxConcurrency: number): Promise<Deployment> {
  const [{ App }, { Template }, { AssayStack }, { DEFAULT_CONFIG }] = await Promise.all([
    import('aws-cdk-lib'),
    import('aws-cdk-lib/assertions'),
    import('../../../infra/stack.js'),
    import('../../../infra/config.js'),
  ]);
  const context = (JSON.parse(readFileSync(join(ROOT, 'infra', 'cdk.json'), 'utf8')) as { context: object })
    .context;
  const outdir = mkdtempSync(join(tmpdir(), 'assay-model-synth-'));
  try {
    const app = new App({ outdir, context: { ...context, 'aws:cdk:bundling-stacks': [] } });
    const config = { ...DEFAULT_CONFIG, workerMaxConcurrency };
    const stack = new AssayStack(app, 'AssayStack', { config });
    const resources = Template.fromStack(stack).toJSON().Resources as Record<string, Resource>;
    const id = (construct: { node: { defaultChild?: unknown } } | object): string =>
      stack.getLogicalId(
        ((construct as { node: { defaultChild?: unknown } }).node.defaultChild ?? construct) as Parameters<
          typeof stack.getLogicalId
        >[0],
      );
    const names = Object.keys(stack.functions) as FunctionName[];
    const fnById = new Map(names.map((name) => [id(stack.functions[name]), name]));
    const queueById = new Map<string, QueueKey>();
    for (const key of ['events', 'items', 'aggregate'] as const) {
      queueById.set(id(stack.queues[key].queue), key);
      queueById.set(id(stack.queues[key].deadLetterQueue), `${key}Dlq`);
    }
    const refs = new Map<string, TemplateValue>([
      [id(stack.storage.bucket), { ref: 'bucket' }],
      [id(stack.storage.table), { ref: 'table' }],
      ...[...queueById].map(
        ([queueId, queue]) => [queueId, { ref: 'queue', queue }] as [string, TemplateValue],
      ),
    ]);
    for (const [logicalId, resource] of Object.entries(resources))
      if (resource.Type === 'AWS::SecretsManager::Secret') refs.set(logicalId, { ref: 'secret' });
    const value = (raw: unknown): TemplateValue => {
      if (typeof raw === 'string') return raw;
      const ref = (raw as { Ref?: string }).Ref;
      const resolved = ref === undefined ? undefined : refs.get(ref);
      if (!resolved)
        throw new Error(`the model cannot resolve ${JSON.stringify(raw)} in a function's environment`);
      return resolved;
    };

    const functions = {} as Record<FunctionName, DeployedFunction>;
    for (const name of names) {
      const props = resources[id(stack.functions[name])]!.Properties!;
      const variables =
        (props.Environment as { Variables?: Record<string, unknown> } | undefined)?.Variables ?? {};
      functions[name] = {
        memoryMb: props.MemorySize as number,
        timeoutS: props.Timeout as number,
        tmpMb: (props.EphemeralStorage as { Size?: number } | undefined)?.Size ?? 512,
        env: Object.fromEntries(Object.entries(variables).map(([k, v]) => [k, value(v)])),
      };
    }
    const getAtt = (raw: unknown) => (raw as { 'Fn::GetAtt'?: [string, string] })['Fn::GetAtt']?.[0] ?? '';
    const mappings: Deployment['mappings'] = [];
    const schedules: Deployment['schedules'] = [];
    for (const resource of Object.values(resources)) {
      const p = resource.Properties ?? {};
      if (resource.Type === 'AWS::Lambda::EventSourceMapping') {
        const fn = fnById.get((p.FunctionName as { Ref: string }).Ref);
        const queue = queueById.get(getAtt(p.EventSourceArn));
        if (!fn || !queue)
          throw new Error(`an event source mapping the model does not know: ${JSON.stringify(p)}`);
        mappings.push({
          fn,
          queue,
          batchSize: (p.BatchSize as number | undefined) ?? 10,
          // Without a maximum, Lambda's own limit for a mapping (the account's concurrency): 1,000.
          maxConcurrency:
            (p.ScalingConfig as { MaximumConcurrency?: number } | undefined)?.MaximumConcurrency ?? 1000,
        });
      } else if (resource.Type === 'AWS::Events::Rule') {
        const targets = (p.Targets as { Arn: unknown }[] | undefined) ?? [];
        const rate = /^rate\((\d+) (minute|minutes|hour|hours)\)$/.exec(String(p.ScheduleExpression ?? ''));
        for (const target of targets) {
          const fn = fnById.get(getAtt(target.Arn));
          if (!fn) continue;
          if (!rate) throw new Error(`a schedule the model does not read: ${String(p.ScheduleExpression)}`);
          const unitMs = rate[2]!.startsWith('hour') ? 3_600_000 : 60_000;
          schedules.push({ fn, periodMs: Number(rate[1]) * unitMs });
        }
      }
    }
    return { functions, mappings, schedules, config: { ...config } };
  } finally {
    rmSync(outdir, { recursive: true, force: true });
  }
}

/** Each function's environment with the stack's references pointing at the simulated resources. */
export function functionEnvironments(
  deployment: Deployment,
  resources: CloudResources,
  secretArn: string,
  region: string,
): Record<FunctionName, NodeJS.ProcessEnv> {
  const resolve = (value: TemplateValue): string => {
    if (typeof value === 'string') return value;
    switch (value.ref) {
      case 'bucket':
        return resources.bucket;
      case 'table':
        return resources.table;
      case 'secret':
        return secretArn;
      case 'queue':
        return resources.queues[value.queue].url;
    }
  };
  return Object.fromEntries(
    Object.entries(deployment.functions).map(([name, fn]) => [
      name,
      {
        // What the Lambda runtime sets in every function's environment.
        AWS_REGION: region,
        AWS_DEFAULT_REGION: region,
        ...Object.fromEntries(Object.entries(fn.env).map(([k, v]) => [k, resolve(v)])),
      },
    ]),
  ) as unknown as Record<FunctionName, NodeJS.ProcessEnv>;
}
