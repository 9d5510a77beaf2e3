/**
 * Each simulated container's own Powertools logger and metrics. The composition root
 * (functions/root.ts) keeps one `logger` and one `metrics` per module, which on Lambda is one
 * per container; in this process every container shares that module, so its methods are
 * routed here to the logger and metrics of the container whose invocation is running (see
 * attribution.ts). A container's logs then carry its own Lambda context, and its metrics are
 * flushed as one EMF line per invocation, as on Lambda; the bytes they write are what
 * CloudWatch Logs would ingest.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { currentInvocation } from './attribution.js';

/** What one container logs and measures with. */
export interface ContainerTelemetry {
  logger: Logger;
  metrics: Metrics;
}

/** A container's logger and metrics, with the service name the stack gives its function. */
export function containerTelemetry(serviceName: string, namespace: string): ContainerTelemetry {
  return {
    logger: new Logger({ serviceName }),
    metrics: new Metrics({ namespace, serviceName }),
  };
}

const LOGGER_METHODS = ['addContext', 'appendKeys', 'critical', 'debug', 'error', 'info', 'warn'] as const;
const METRICS_METHODS = ['addMetric', 'hasStoredMetrics', 'publishStoredMetrics'] as const;

/**
 * Routes the shared `logger` and `metrics` objects' methods to the running container's own.
 * Outside an invocation the shared objects answer themselves. Returns what puts them back.
 */
export function routeTelemetry(shared: { logger: Logger; metrics: Metrics }): () => void {
  const restore: (() => void)[] = [];
  const route = <T extends object>(
    target: T,
    methods: readonly string[],
    pick: (t: ContainerTelemetry) => T,
  ) => {
    const record = target as unknown as Record<string, unknown>;
    for (const method of methods) {
      const own = Object.hasOwn(record, method);
      const previous = record[method];
      const original = (previous as (...a: unknown[]) => unknown).bind(target);
      record[method] = (...args: unknown[]) => {
        const container = currentInvocation()?.container as ContainerTelemetry | undefined;
        if (!container) return original(...args);
        const mine = pick(container) as unknown as Record<string, (...a: unknown[]) => unknown>;
        return mine[method]!(...args);
      };
      restore.push(() => {
        if (own) record[method] = previous;
        else delete record[method];
      });
    }
  };
  route(shared.logger, LOGGER_METHODS, (t) => t.logger);
  route(shared.metrics, METRICS_METHODS, (t) => t.metrics);
  return () => {
    for (const undo of restore) undo();
  };
}
