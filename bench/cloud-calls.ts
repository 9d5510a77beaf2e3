/**
 * Where `assay cloud`'s time and table go: runs a GEC suite of N items (with a budget, as a
 * deployment's default gives every run) through the local cloud (moto plus the real handlers,
 * each container a thread of this process) and counts the AWS calls by operation. Without
 * `--faults` the suite runs on the simulator (a fault-free baseline); with it, against the
 * fault-injection server of `npm run chaos`.
 *
 * `npx tsx bench/cloud-calls.ts [--items 200] [--faults] [--seed 1] [--json file]`
 *
 * What this thread sends (the poller's SQS and S3 calls) is seen through Node's `http.client.*`
 * diagnostics channels, with the time each took; moto handles one request at a time, so a
 * call's time includes its wait for the server's lock. The functions run in worker threads,
 * whose requests those channels do not see: DynamoDB's are counted by the moto stand-in itself
 * (requests and request units by operation, as DynamoDB counts them), the figures the capacity
 * model's `per item` line gives for the same run.
 */
import diagnostics from 'node:diagnostics_channel';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import http, { type ClientRequest, type IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { runLocalCloud } from '../cli/cloud/local-cloud.js';
import { startFaultServer } from './chaos/server.js';
import { distinctGecCsv } from './parts/data.js';

const { values } = parseArgs({
  options: {
    items: { type: 'string', default: '200' },
    faults: { type: 'boolean', default: false },
    seed: { type: 'string', default: '1' },
    json: { type: 'string' },
  },
});
const ITEMS = Number(values.items);
if (!(ITEMS > 0)) throw new Error('--items must be a positive number');

interface Tally {
  calls: number;
  ms: number;
}
const tallies = new Map<string, Tally>();
const started = new WeakMap<ClientRequest, { op: string; at: number }>();
let motoHost = '';

/** `Service.Operation` for the JSON protocols (SQS, DynamoDB), `S3 <METHOD>` for S3. */
function operationOf(request: ClientRequest): string | undefined {
  if (!motoHost || request.host !== motoHost.split(':')[0]) return undefined;
  const target = request.getHeader('x-amz-target');
  if (typeof target === 'string') {
    const [service, op] = target.split('.');
    return `${service?.startsWith('DynamoDB') ? 'DynamoDB' : service === 'AmazonSQS' ? 'SQS' : service}.${op}`;
  }
  return `S3 ${request.method}`;
}
/** Request bodies, kept as they are written (the start channel fires after the body is sent). */
const bodies = new WeakMap<ClientRequest, string>();
const end = http.ClientRequest.prototype.end;
http.ClientRequest.prototype.end = function (this: ClientRequest, chunk?: unknown, ...rest: unknown[]) {
  if (typeof chunk === 'string') bodies.set(this, chunk);
  else if (chunk instanceof Uint8Array) bodies.set(this, Buffer.from(chunk).toString());
  return (end as (...args: unknown[]) => ClientRequest).call(this, chunk, ...rest);
} as typeof end;
diagnostics.channel('http.client.request.start').subscribe((message) => {
  const { request } = message as { request: ClientRequest };
  const op = operationOf(request);
  if (!op) return;
  const entry = { op, at: performance.now() };
  started.set(request, entry);
  // DynamoDB single-item calls: which kind of item (the key's prefix), from the body.
  if (/^DynamoDB\.(GetItem|PutItem|UpdateItem)$/.test(op)) {
    const pk = /"pk":\{"S":"([a-z_]+)#/i.exec(bodies.get(request) ?? '')?.[1];
    entry.op = `${op} ${pk ?? '?'}#`;
  }
});
diagnostics.channel('http.client.response.finish').subscribe((message) => {
  const { request } = message as { request: ClientRequest; response: IncomingMessage };
  const entry = started.get(request);
  if (!entry) return;
  started.delete(request);
  const tally = tallies.get(entry.op) ?? { calls: 0, ms: 0 };
  tally.calls += 1;
  tally.ms += performance.now() - entry.at;
  tallies.set(entry.op, tally);
});

async function writeDataset(dir: string): Promise<string> {
  await mkdir(dir, { recursive: true });
  await distinctGecCsv(join(dir, 'data.csv'), ITEMS);
  const suitePath = join(dir, 'calls.suite.json');
  await writeFile(
    suitePath,
    JSON.stringify({
      version: 1,
      name: 'calls',
      task: 'gec',
      judge: 'feedback',
      method: 'baseline',
      dataset: { path: 'data.csv' },
      backends: ['openai:gpt-4o-mini'],
      run: { concurrency: 64, maxAttempts: 6, timeoutMs: 10_000, budgetUsd: 100 },
    }),
  );
  return suitePath;
}

const dir = join(tmpdir(), `assay-cloud-calls-${process.pid}`);
const suitePath = await writeDataset(dir);
const server = values.faults
  ? await startFaultServer({ seed: Number(values.seed), maxRequests: ITEMS * 6, maxLifetimeMs: 3_600_000 })
  : undefined;
if (server) {
  process.env.OPENAI_API_KEY = 'chaos';
  process.env.OPENAI_BASE_URL = `${server.url}/v1`;
}
process.env.POWERTOOLS_LOG_LEVEL ??= 'ERROR';
const t0 = performance.now();
let runStarted = 0;
try {
  const result = await runLocalCloud({
    suitePath,
    simulate: !server,
    outDir: join(dir, 'out'),
    onLog: (line) => {
      const endpoint = /moto_server on (http:\/\/\S+);/.exec(line)?.[1];
      if (endpoint) motoHost = new URL(endpoint).host;
      if (line.includes('the S3 notification starts the run')) runStarted = performance.now();
    },
  });
  const wall = (performance.now() - t0) / 1000;
  const run = (performance.now() - runStarted) / 1000;
  const rows = [...tallies.entries()].sort((a, b) => b[1].ms - a[1].ms);
  const total = rows.reduce((n, [, t]) => n + t.calls, 0);
  const lines = [
    `${ITEMS} items, ${server ? 'fault server' : 'simulator'}: wall ${wall.toFixed(1)} s (from the dataset upload ${run.toFixed(1)} s), ` +
      `${total} AWS calls (${(total / ITEMS).toFixed(1)} per item), report ${result.report?.counts.items ?? '?'} items`,
    `${'operation'.padEnd(34)} ${'calls'.padStart(7)} ${'/item'.padStart(6)} ${'ms each'.padStart(8)} ${'total s'.padStart(8)}`,
    ...rows.map(
      ([op, t]) =>
        `${op.padEnd(34)} ${String(t.calls).padStart(7)} ${(t.calls / ITEMS).toFixed(2).padStart(6)} ` +
        `${(t.ms / t.calls).toFixed(1).padStart(8)} ${(t.ms / 1000).toFixed(1).padStart(8)}`,
    ),
  ];
  const served = Object.entries(result.tableServed ?? {}).sort((a, b) => b[1].requests - a[1].requests);
  const sum = (pick: (s: { requests: number; read: number; write: number }) => number) =>
    served.reduce((n, [, s]) => n + pick(s), 0);
  const writeOps = new Set(['PutItem', 'UpdateItem', 'DeleteItem', 'BatchWriteItem', 'TransactWriteItems']);
  const requests = (write: boolean) =>
    served.filter(([op]) => writeOps.has(op) === write).reduce((n, [, s]) => n + s.requests, 0);
  const perItem = {
    dynamoWriteUnits: sum((s) => s.write) / ITEMS,
    dynamoReadUnits: sum((s) => s.read) / ITEMS,
    dynamoWriteRequests: requests(true) / ITEMS,
    dynamoReadRequests: requests(false) / ITEMS,
  };
  lines.push(
    '',
    `DynamoDB, as the moto stand-in served it: per item ${perItem.dynamoWriteUnits.toFixed(2)} WRU, ${perItem.dynamoReadUnits.toFixed(2)} RRU (${perItem.dynamoWriteRequests.toFixed(2)} write and ${perItem.dynamoReadRequests.toFixed(2)} read requests)`,
    `${'operation'.padEnd(34)} ${'requests'.padStart(9)} ${'/item'.padStart(6)} ${'WRU'.padStart(9)} ${'RRU'.padStart(9)}`,
    ...served.map(
      ([op, s]) =>
        `${`DynamoDB.${op}`.padEnd(34)} ${String(s.requests).padStart(9)} ${(s.requests / ITEMS).toFixed(2).padStart(6)} ${s.write.toFixed(0).padStart(9)} ${s.read.toFixed(0).padStart(9)}`,
    ),
  );
  process.stdout.write(`${lines.join('\n')}\n`);
  if (values.json) {
    await writeFile(
      values.json,
      `${JSON.stringify({ items: ITEMS, faults: Boolean(server), wallSeconds: wall, runSeconds: run, calls: Object.fromEntries(rows), perItem, dynamo: Object.fromEntries(served) }, null, 2)}\n`,
    );
  }
} finally {
  await server?.close();
  await rm(dir, { recursive: true, force: true });
}
