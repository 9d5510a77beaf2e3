/**
 * The capacity model (`npm run bench:cloud -- --items N [--json FILE]`): the product's Lambda
 * handlers, adapters and use-cases run over capacity-accounting stand-ins of DynamoDB, SQS and
 * S3 on a simulated clock, with a stand-in LLM vendor (a lognormal latency, a burst of 429s);
 * Lambda scales the mappings and the table serves as AWS documents. It reports whether the AWS
 * data path holds at N items and projects 1,000,000 and 10,000,000 items from what it measured
 * (bench/cloud/model/, docs/performance.md "Capacity model").
 *
 *   --items N          items of the run (default 10,000)
 *   --compare M        also run M items (e.g. a tenth): per-item figures side by side, two-size fits
 *   --json FILE        where the JSON goes (default bench/results/cloud.json)
 *   --concurrency C    the worker's maximum concurrency (default 1,000)
 *   --llm-ms L         the simulated LLM call's median latency (default 1,000; p99 five times it)
 *   --esm MODE         the items mapping's mode: standard or provisioned (default the deploy setting's)
 *   --no-burst         no burst of 429s from the vendor (default: a fifth of the calls for 10 s, 30 s in)
 *   --result-kb K      each answer grown to K KB: a workload with large results (e.g. 20)
 *   --vendor-rpm R     the requests a minute the vendor reports as its limit (default 1,000,000)
 *   --seed S           the simulation's seed (default 1)
 *   --context K=V      a deploy setting, as `cdk deploy -c K=V` takes it (repeatable), e.g.
 *                      tableWarmWriteUnitsPerSecond=40000
 *   --chunk-bytes B    ingest's range size (default 8 MiB): smaller, a small run reads its file
 *                      in ranges side by side as a large one does
 *
 * Run it with --expose-gc (the npm script does): the memory figures collect before each replay.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { EVENT_SOURCE_MODES, type EventSourceMode } from './cloud/model/deployment.js';
import { runModel } from './cloud/model/model.js';
import { summary } from './cloud/model/summary.js';
import { ROOT } from './parts/data.js';

const { values } = parseArgs({
  options: {
    items: { type: 'string', default: '10000' },
    compare: { type: 'string' },
    json: { type: 'string', default: resolve(ROOT, 'bench', 'results', 'cloud.json') },
    concurrency: { type: 'string', default: '1000' },
    'llm-ms': { type: 'string', default: '1000' },
    esm: { type: 'string' },
    'no-burst': { type: 'boolean', default: false },
    'result-kb': { type: 'string' },
    'vendor-rpm': { type: 'string' },
    seed: { type: 'string', default: '1' },
    context: { type: 'string', multiple: true },
    'chunk-bytes': { type: 'string' },
  },
  strict: true,
});

const positive = (name: string, raw: string | undefined): number => {
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1)
    throw new Error(`--${name} must be a positive integer, got ${raw}`);
  return value;
};

if (!(globalThis as { gc?: unknown }).gc)
  process.stderr.write(
    'note: run with --expose-gc (npm run bench:cloud does) so that replays collect before they measure\n',
  );

const esm = values.esm;
if (esm !== undefined && !EVENT_SOURCE_MODES.includes(esm as EventSourceMode))
  throw new Error(`--esm must be one of ${EVENT_SOURCE_MODES.join(', ')}, got ${esm}`);

const context: Record<string, string> = {};
for (const pair of values.context ?? []) {
  const at = pair.indexOf('=');
  if (at < 1) throw new Error(`--context takes KEY=VALUE, got ${pair}`);
  context[pair.slice(0, at)] = pair.slice(at + 1);
}

const report = await runModel({
  items: positive('items', values.items),
  ...(values.compare === undefined ? {} : { compare: positive('compare', values.compare) }),
  concurrency: positive('concurrency', values.concurrency),
  llmMs: positive('llm-ms', values['llm-ms']),
  ...(esm === undefined ? {} : { esm: esm as EventSourceMode }),
  ...(values['no-burst'] ? { burst: null } : {}),
  ...(values['vendor-rpm'] === undefined ? {} : { vendorRpm: positive('vendor-rpm', values['vendor-rpm']) }),
  ...(values['result-kb'] === undefined
    ? {}
    : { answerBytes: positive('result-kb', values['result-kb']) * 1024 }),
  seed: positive('seed', values.seed),
  ...(Object.keys(context).length > 0 ? { context } : {}),
  ...(values['chunk-bytes'] === undefined
    ? {}
    : { chunkBytes: positive('chunk-bytes', values['chunk-bytes']) }),
});
const path = resolve(values.json);
await mkdir(dirname(path), { recursive: true });
await writeFile(path, `${JSON.stringify(report, null, 2)}\n`);
process.stdout.write(`${summary(report)}\nwritten to ${path}\n`);
