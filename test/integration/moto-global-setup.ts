/**
 * Starts the moto_servers of the integration files once for the whole run, one per test
 * worker (a file picks its worker's, see `startMoto` in ./moto.ts): starting moto costs
 * seconds of CPU, and every file makes its own uniquely named bucket, table and queues, so
 * files that run one after another can share a server. Each worker has its own, so two files
 * running at once never wait on each other's requests (moto serves one request at a time).
 */
import type { TestProject } from 'vitest/node';
import { type Moto, startMoto } from '../../cli/cloud/moto.js';

declare module 'vitest' {
  export interface ProvidedContext {
    motoEndpoints: string[];
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const workers = Math.max(1, Number(project.config.maxWorkers) || 1);
  const servers: Moto[] = await Promise.all(
    Array.from({ length: workers }, () => startMoto({ timeoutMs: 120_000 })),
  );
  project.provide(
    'motoEndpoints',
    servers.map((s) => s.endpoint),
  );
  return async () => {
    await Promise.all(servers.map((s) => s.stop()));
  };
}
