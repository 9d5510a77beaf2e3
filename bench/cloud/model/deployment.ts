/**
 * The deployment as the stack declares it: the CDK app is built and synthesized in this process
 * (asset bundling skipped through CDK's own switch, as `cdk ls` does; infra/cdk.json's flags),
 * and read back from the template: each function's memory, timeout, /tmp, reserved concurrency
 * and environment variables, each event source mapping's queue, batch size, maximum concurrency
 * or provisioned pollers, each schedule's rate, the table's warm throughput and TTL attribute.
 * Nothing about the wiring is restated here, so the model runs what a deploy would, with
 * `workerMaxConcurrency` (and the items mapping's mode, when asked) set as deploy context
 * (infra/config.ts). What the template does not say takes AWS's documented defaults: a
 * mapping in standard mode, no reserved concurrency, a new on-demand table's throughput, the
 * account's quotas (1,000 concurrent executions, 40,000 request units per second per table).
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
  /** Concurrency set aside for the function (also its most at once); null: it shares the account's. */
  reservedConcurrency: number | null;
  env: Record<string, TemplateValue>;
}

/** How Lambda scales an SQS event source mapping's pollers. */
export type EventSourceMode = 'standard' | 'provisioned';
export const EVENT_SOURCE_MODES: readonly EventSourceMode[] = ['standard', 'provisioned'];

export interface DeployedMapping {
  fn: FunctionName;
  queue: QueueKey;
  batchSize: number;
  /** Seconds the pollers may gather records for one batch (MaximumBatchingWindowInSeconds). */
  batchingWindowS: number;
  /** Standard mode: the most invocations at once (Lambda's own ceiling when none is set). */
  maxConcurrency: number;
  mode: EventSourceMode;
  /** Provisioned mode: the pollers kept ready and the most it scales to; null in standard mode. */
  minPollers: number | null;
  maxPollers: number | null;
}

/** What the account and the table allow, as declared or by AWS's defaults. */
export interface DeployedLimits {
  /** Concurrent executions of every function of the account together. */
  accountConcurrency: number;
  /** The table's warm throughput (what it serves from the start); null: a new table's. */
  warmWriteUnitsPerSecond: number | null;
  warmReadUnitsPerSecond: number | null;
  /** The table's quota, request units per second. */
  tableWriteQuota: number;
  tableReadQuota: number;
  /** The attribute DynamoDB expires items by; null: items never expire. */
  ttlAttribute: string | null;
  /** Days a run's results are kept (the deploy setting); null when the deployment keeps them for ever. */
  resultRetentionDays: number | null;
}

export interface Deployment {
  functions: Record<FunctionName, DeployedFunction>;
  /** Queue → function mappings: the queue, records per invocation, how they scale. */
  mappings: DeployedMapping[];
  schedules: { fn: FunctionName; periodMs: number }[];
  limits: DeployedLimits;
  /** What the model assumed that the template did not declare. */
  assumed: string[];
  /** The deploy settings used (infra/config.ts, from the context set here). */
  config: Record<string, unknown>;
}

/** AWS's documented defaults for what a template does not declare. */
export const AWS_DEFAULTS = {
  accountConcurrency: 1000,
  /** An account's default quota per table, each way. */
  tableQuota: 40_000,
  /** Standard mode: the most invocations one SQS mapping runs at once. */
  standardMaxConcurrency: 1250,
  /** Provisioned mode for SQS: pollers when none are declared. */
  minPollers: 2,
  maxPollers: 200,
} as const;

export interface SynthesisOptions {
  /** The items mapping's mode; default the deploy setting's. */
  esm?: EventSourceMode;
  /** Deploy settings (CDK context, as `-c key=value` gives them) over the stack's defaults. */
  context?: Record<string, string>;
}

type Resource = { Type: string; Properties?: Record<string, unknown> };

/** Builds the stack with the stack's defaults and `workerMaxConcurrency`, and reads its template. */
export async function synthesizeDeployment(
  workerMaxConcurrency: number,
  options: SynthesisOptions = {},
): Promise<Deployment> {
  const [{ App }, { Template }, { AssayStack }, { configFromContext }] = await Promise.all([
    import('aws-cdk-lib'),
    import('aws-cdk-lib/assertions'),
    import('../../../infra/stack.js'),
    import('../../../infra/config.js'),
  ]);
  const context = (JSON.parse(readFileSync(join(ROOT, 'infra', 'cdk.json'), 'utf8')) as { context: object })
    .context;
  const outdir = mkdtempSync(join(tmpdir(), 'assay-model-synth-'));
  try {
    const app = new App({
      outdir,
      context: {
        ...context,
        ...options.context,
        'aws:cdk:bundling-stacks': [],
        workerMaxConcurrency,
        ...(options.esm ? { workerEventSourceMode: options.esm } : {}),
      },
    });
    const config = configFromContext(app.node);
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
        reservedConcurrency: (props.ReservedConcurrentExecutions as number | undefined) ?? null,
        env: Object.fromEntries(Object.entries(variables).map(([k, v]) => [k, value(v)])),
      };
    }
    const getAtt = (raw: unknown) => (raw as { 'Fn::GetAtt'?: [string, string] })['Fn::GetAtt']?.[0] ?? '';
    const mappings: Deployment['mappings'] = [];
    const schedules: Deployment['schedules'] = [];
    const settings = config as unknown as Record<string, unknown>;
    const setting = (key: string): number | null => {
      const v = settings[key];
      return typeof v === 'number' && v > 0 ? v : null;
    };
    const limits: DeployedLimits = {
      accountConcurrency: setting('lambdaConcurrencyQuota') ?? AWS_DEFAULTS.accountConcurrency,
      warmWriteUnitsPerSecond: null,
      warmReadUnitsPerSecond: null,
      tableWriteQuota: setting('tableWriteQuota') ?? AWS_DEFAULTS.tableQuota,
      tableReadQuota: setting('tableReadQuota') ?? AWS_DEFAULTS.tableQuota,
      ttlAttribute: null,
      resultRetentionDays: setting('resultRetentionDays'),
    };
    for (const resource of Object.values(resources)) {
      const p = resource.Properties ?? {};
      if (resource.Type === 'AWS::Lambda::EventSourceMapping') {
        const fn = fnById.get((p.FunctionName as { Ref: string }).Ref);
        const queue = queueById.get(getAtt(p.EventSourceArn));
        if (!fn || !queue)
          throw new Error(`an event source mapping the model does not know: ${JSON.stringify(p)}`);
        const pollers = p.ProvisionedPollerConfig as
          | { MinimumPollers?: number; MaximumPollers?: number }
          | undefined;
        mappings.push({
          fn,
          queue,
          batchSize: (p.BatchSize as number | undefined) ?? 10,
          batchingWindowS: (p.MaximumBatchingWindowInSeconds as number | undefined) ?? 0,
          maxConcurrency: Math.min(
            AWS_DEFAULTS.standardMaxConcurrency,
            (p.ScalingConfig as { MaximumConcurrency?: number } | undefined)?.MaximumConcurrency ??
              AWS_DEFAULTS.standardMaxConcurrency,
          ),
          mode: pollers ? 'provisioned' : 'standard',
          minPollers: pollers ? (pollers.MinimumPollers ?? AWS_DEFAULTS.minPollers) : null,
          maxPollers: pollers ? (pollers.MaximumPollers ?? AWS_DEFAULTS.maxPollers) : null,
        });
      } else if (resource.Type === 'AWS::DynamoDB::Table') {
        const warm = p.WarmThroughput as
          | { ReadUnitsPerSecond?: number; WriteUnitsPerSecond?: number }
          | undefined;
        limits.warmReadUnitsPerSecond = warm?.ReadUnitsPerSecond ?? null;
        limits.warmWriteUnitsPerSecond = warm?.WriteUnitsPerSecond ?? null;
        const ttl = p.TimeToLiveSpecification as { AttributeName?: string; Enabled?: boolean } | undefined;
        limits.ttlAttribute = ttl?.Enabled ? (ttl.AttributeName ?? null) : null;
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
    // A mode asked for that the template does not declare (a stack without the setting) is
    // modelled as asked, with the pollers the settings or AWS's defaults give, and said so.
    const assumed: string[] = [];
    const items = mappings.find((m) => m.fn === 'worker');
    if (options.esm && items && items.mode !== options.esm) {
      assumed.push(
        `the template declares the items mapping in ${items.mode} mode; the model runs it in ${options.esm} mode as asked`,
      );
      items.mode = options.esm;
      items.minPollers =
        options.esm === 'provisioned' ? (setting('workerMinPollers') ?? AWS_DEFAULTS.minPollers) : null;
      items.maxPollers =
        options.esm === 'provisioned' ? (setting('workerMaxPollers') ?? AWS_DEFAULTS.maxPollers) : null;
    }
    if (limits.warmWriteUnitsPerSecond === null && setting('tableWarmWriteUnitsPerSecond') !== null)
      assumed.push('tableWarmWriteUnitsPerSecond is set but the template declares no warm throughput');
    return { functions, mappings, schedules, limits, assumed, config: { ...config } };
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
