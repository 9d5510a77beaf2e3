/**
 * Calibration: each captured invocation (snapshots.ts) replayed alone, after the run, on the
 * state it started from, with nothing else running in the process — a fresh simulated AWS
 * restored from the snapshot (the same tables and buckets, empty queues of the same names), a
 * new container of the function (its warm-up events first, for a warm one), and the same event.
 *
 * What a run cannot tell apart between interleaved invocations is measured here:
 *
 * - **Peak heap**: the live heap (V8's used heap plus its external memory: Buffers, typed
 *   arrays), read at the switches between asynchronous callbacks while the invocation runs
 *   (attribution.ts) after a full collection each time it has grown by a step (a
 *   8 MB or a quarter of the invocation's growth so far, see {@link Probe}; `--expose-gc`), less what it was
 *   after one just before the invocation, less what the stand-ins came to hold meanwhile (S3's
 *   objects and its open uploads' parts, a part copied inside S3 included; SQS messages;
 *   DynamoDB items: the process holds them, a Lambda would not; their JavaScript overhead is not
 *   taken off).
 *   Garbage is not counted: V8 lets it pile up beyond the live heap before it collects, which
 *   the 80 % headroom is for. Peaks inside one synchronous stretch are missed.
 * - **Its /tmp**: the invocation gets a TMPDIR of its own, whose size is read at those switches (at
 *   most every 5 ms) and at the end.
 * - **CPU**: charged by async context as in the run, so the replay also checks the run's
 *   attribution of the same invocation made while thousands of others were interleaved with it.
 *
 * The assembly (`aggregate:assemble`) of the largest run is also replayed on more parts than
 * any run has ({@link SCALED_PARTS}): its figures at those are how it grows with a run's parts.
 */
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { getHeapStatistics } from 'node:v8';
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { lambdaContext } from '../../../cli/cloud/lambda-context.js';
import { S3BlobStore } from '../../../shared/adapters/aws/s3-blob-store.js';
import { META_SK, runPk } from '../../../shared/lib/layout/table.js';
import type { PartFilesIndex } from '../../../shared/reports/part-files.js';
import { partFilesIndexKey } from '../../../shared/use-cases/aggregate-parts.js';
import { SimAws } from '../clients.js';
import { SimWorld } from '../world.js';
import { CpuMeter, captureOutput, type RunningInvocation, runAs } from './attribution.js';
import { cpuShare, type Handler } from './fleet.js';
import { type LoadedFunctions, withEnv } from './functions.js';
import { containerTelemetry, routeTelemetry } from './logging.js';
import { ACCOUNT, LOG_LEVEL, REGION, type Simulation, serveAsAws } from './simulation.js';
import type { Capture } from './snapshots.js';

export interface Calibrated {
  fn: Capture['fn'];
  kind: string;
  label: string;
  /** Real ms of CPU charged to the invocation alone (this machine). */
  cpuMs: number;
  /** Peak heap over the heap before it, MB (see the module's comment). */
  peakHeapMb: number;
  /** The stand-ins' stored bytes taken off the peak, MB. */
  storedMb: number;
  /** Most bytes in its /tmp at once, MB. */
  peakTmpMb: number;
  /** Simulated ms the invocation took in the replay, its CPU included (as in the run). */
  durationMs: number;
  /** Heap readings taken, and full collections run for them. */
  samples: number;
  collections: number;
  /** Whether a full collection preceded it (the process was started with --expose-gc). */
  collected: boolean;
  /** A replay on more parts than the run had: how many, and the results they stand for. */
  scaled?: { parts: number; items: number };
  error?: string;
}

/**
 * Parts the largest run's assembly is replayed on besides its own: the run's parts, then its
 * largest part repeated (its index written again under the next part numbers, naming the same
 * files) up to this many. The assembly composes each file of every part's stretch of it, a few
 * stretches at once (8 read ahead and 8 parts in flight a file): the few parts of a run the
 * model can simulate do not fill that, so a line through two runs is a line through a pipeline
 * filling up. At 32 and 64 parts (a part of a chunk's results gives errors.txt some 3 MB to
 * gather: 96 MB at 32 parts, more than its 8 parts in flight and 8 stretches read ahead hold) it
 * is full, and what grows between them grows with the parts.
 */
export const SCALED_PARTS = [32, 64] as const;

const MB = 1024 * 1024;
const gc = (globalThis as { gc?: () => void }).gc;

/** Replays every captured invocation of `sim` alone; returns one figure set each. */
export async function calibrate(
  sim: Simulation,
  functions: LoadedFunctions,
  log: (line: string) => void = () => {},
  { scaleAssembly = false }: { scaleAssembly?: boolean } = {},
): Promise<Calibrated[]> {
  const out: Calibrated[] = [];
  const restoreOutput = captureOutput(() => {});
  const restoreTelemetry = routeTelemetry(functions.shared);
  try {
    await withEnv(
      {
        POWERTOOLS_LOG_LEVEL: LOG_LEVEL,
        POWERTOOLS_METRICS_NAMESPACE: 'Assay',
        AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
      },
      async () => {
        const assembly = sim.captures.find((c) => c.kind === 'aggregate:assemble');
        const replays: [Capture, number | undefined][] = [
          ...withDeadLetter(sim).map((c): [Capture, undefined] => [c, undefined]),
          ...(scaleAssembly && assembly ? SCALED_PARTS.map((p): [Capture, number] => [assembly, p]) : []),
        ];
        for (const [capture, parts] of replays) {
          const started = process.hrtime.bigint();
          const result = await replay(sim, functions, capture, parts);
          if (result === undefined) continue;
          out.push(result);
          log(
            `    ${result.label}: ${result.peakHeapMb} MB heap, ${result.collections} collections, ${Math.round(Number(process.hrtime.bigint() - started) / 1e9)} s`,
          );
        }
      },
    );
  } finally {
    restoreTelemetry();
    restoreOutput();
  }
  return out;
}

/** Replays `capture` alone (on `parts` parts: see {@link SCALED_PARTS}; undefined when the run has as many). */
async function replay(
  sim: Simulation,
  functions: LoadedFunctions,
  capture: Capture,
  parts?: number,
): Promise<Calibrated | undefined> {
  const world = new SimWorld({ epochMs: capture.atEpochMs, seed: sim.options.seed });
  const aws = new SimAws(world, sim.awsOptions);
  // Dead-letter queues first: a queue's redrive policy names its DLQ.
  const queues = [...sim.queueDefinitions].sort(
    (a, b) => Number(b.name.endsWith('-dlq')) - Number(a.name.endsWith('-dlq')),
  );
  for (const { name, attributes } of queues) aws.sqs.createQueue(name, attributes);
  aws.dynamo.restore(capture.dynamo);
  aws.s3.restore(capture.s3);
  serveAsAws(aws, world);
  const tmp = mkdtempSync(join(tmpdir(), `assay-calibrate-${capture.fn}-`));
  const previousTmp = process.env.TMPDIR;
  process.env.TMPDIR = tmp;
  const definition = functions.definitions[capture.fn];
  const env = sim.env[capture.fn];
  const telemetry = containerTelemetry(`assay-${definition.entry}`, 'Assay');
  const meter = new CpuMeter();
  const probe = new Probe(tmp, () => storedBytes(aws));
  const { memoryMb, timeoutS } = sim.options.deployment.functions[capture.fn];
  const share = cpuShare(memoryMb);
  const invocation: RunningInvocation = {
    fn: capture.fn,
    tally: { cpuMs: 0, logBytes: 0 },
    container: telemetry,
    share,
    charged: 0,
  };
  const context = () =>
    lambdaContext({
      functionName: `assay-${definition.entry}`,
      region: REGION,
      account: ACCOUNT,
      deadline: world.now() + timeoutS * 1000,
      memoryMb,
    });
  let error: string | undefined;
  let durationMs = 0;
  let stored = 0;
  let scaled: Calibrated['scaled'];
  let unscaled = false;
  meter.start();
  try {
    await world.run(async () => {
      let handler: Handler;
      try {
        handler = definition.build({ env, clients: aws.clients() });
      } catch (thrown) {
        error = `init failed: ${thrown instanceof Error ? `${thrown.name}: ${thrown.message}` : String(thrown)}`;
        return;
      }
      for (const event of capture.warmup) {
        const warm: RunningInvocation = { ...invocation, tally: { cpuMs: 0, logBytes: 0 }, charged: 0 };
        await runAs(warm, () => handler(event, context())).catch(() => undefined);
      }
      if (parts !== undefined) {
        scaled = await scaleParts(aws, sim.env.aggregate, capture.event, parts);
        if (scaled === undefined) {
          unscaled = true;
          return;
        }
      }
      const before = storedBytes(aws);
      probe.start();
      meter.onSwitch = () => probe.sample();
      const started = world.now();
      try {
        await runAs(invocation, () => handler(capture.event, context()));
      } catch (thrown) {
        error = thrown instanceof Error ? `${thrown.name}: ${thrown.message}` : String(thrown);
      }
      meter.onSwitch = undefined;
      probe.sample(true);
      // Never shorter than its CPU at its share of a vCPU: work in several async chains at once
      // has each chain's CPU charged to its own next wait, side by side, as one vCPU cannot run it.
      durationMs = Math.max(
        world.now() - started + Math.max(0, invocation.tally.cpuMs - invocation.charged) / share,
        invocation.tally.cpuMs / share,
      );
      stored = storedBytes(aws) - before;
    });
  } finally {
    meter.stop();
    if (previousTmp === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = previousTmp;
    rmSync(tmp, { recursive: true, force: true });
  }
  if (unscaled) return undefined;
  return {
    fn: capture.fn,
    kind: capture.kind,
    label: scaled
      ? `${capture.label}, on ${scaled.parts} parts (its largest repeated: ${scaled.items.toLocaleString('en-US')} results)`
      : capture.label,
    cpuMs: round(invocation.tally.cpuMs),
    peakHeapMb: round(Math.max(0, probe.peakHeap - probe.baseHeap - (gc ? 0 : stored)) / MB),
    storedMb: round(stored / MB),
    peakTmpMb: round(probe.peakTmp / MB),
    durationMs: round(durationMs),
    samples: probe.samples,
    collections: probe.collections,
    collected: gc !== undefined,
    ...(scaled ? { scaled } : {}),
    ...(error === undefined ? {} : { error }),
  };
}

/**
 * Makes the run of an assembly's `event` one of `parts` parts, as {@link SCALED_PARTS} says: its
 * largest part's index written again under each part number the run does not have, and its
 * record's part count set. Returns the parts and the results they hold; undefined when the run
 * has `parts` parts or more already.
 */
async function scaleParts(
  aws: SimAws,
  env: NodeJS.ProcessEnv,
  event: unknown,
  parts: number,
): Promise<Calibrated['scaled']> {
  const { runId } = JSON.parse((event as { Records: { body: string }[] }).Records[0]!.body) as {
    runId: string;
  };
  const clients = aws.clients();
  const store = new S3BlobStore({ client: clients.s3, bucket: env.BUCKET_NAME! });
  const Key = { pk: runPk(runId), sk: META_SK };
  const meta = await clients.doc.send(new GetCommand({ TableName: env.TABLE_NAME!, Key }));
  const have = Number(meta.Item?.parts ?? 1);
  if (have >= parts) return undefined;
  const indexes: PartFilesIndex[] = [];
  for (let p = 0; p < have; p += 1) {
    const bytes = await store.get(partFilesIndexKey(runId, p));
    if (!bytes) throw new Error(`part ${p} of run ${runId} has no files index to repeat`);
    indexes.push(JSON.parse(new TextDecoder().decode(bytes)) as PartFilesIndex);
  }
  const largest = indexes.reduce((a, b) => (b.items > a.items ? b : a));
  for (let p = have; p < parts; p += 1)
    await store.put(partFilesIndexKey(runId, p), JSON.stringify({ ...largest, part: p }), 'application/json');
  await clients.doc.send(
    new UpdateCommand({
      TableName: env.TABLE_NAME!,
      Key,
      UpdateExpression: 'SET #parts = :parts',
      ExpressionAttributeNames: { '#parts': 'parts' },
      ExpressionAttributeValues: { ':parts': parts },
    }),
  );
  const items = indexes.reduce((n, i) => n + i.items, 0) + (parts - have) * largest.items;
  return { parts, items };
}

/**
 * The run's captures, and when no item was dead-lettered in it, a dead-letter batch made of the
 * first warm worker batch (the same item messages, as the items queue's DLQ would hand them on
 * after their last receive) on the state that batch started from.
 */
function withDeadLetter(sim: Simulation): Capture[] {
  if (sim.captures.some((c) => c.fn === 'deadLetter')) return sim.captures;
  const batch = [...sim.captures].reverse().find((c) => c.fn === 'worker');
  if (!batch) return sim.captures;
  const dlq = sim.queueDefinitions.find((q) => q.name.endsWith('-items-dlq'));
  const records = (batch.event as { Records: Record<string, unknown>[] }).Records.map((r) => ({
    ...r,
    attributes: { ...(r.attributes as object), ApproximateReceiveCount: '3' },
    eventSourceARN: dlq ? `arn:aws:sqs:${REGION}:${ACCOUNT}:${dlq.name}` : r.eventSourceARN,
  }));
  return [
    ...sim.captures,
    {
      ...batch,
      fn: 'deadLetter',
      kind: 'deadLetter',
      label: 'a worker batch replayed as a dead-letter batch (no item was dead-lettered in the run)',
      event: { Records: records },
      warmup: [],
    },
  ];
}

/**
 * Bytes the stand-ins hold: S3's objects and the parts of its open uploads (a part copied inside
 * S3 is held by the stand-in, in this process, where a function's memory holds nothing of it),
 * SQS messages sent, DynamoDB items.
 */
function storedBytes(aws: SimAws): number {
  return aws.s3.heldBytes() + aws.sqs.heldBytes() + aws.dynamo.heldBytes();
}

/**
 * Reads the live heap and a folder's size while an invocation runs. The invocation's own heap
 * is the used heap (garbage included) less what the stand-ins came to hold since the start; each
 * time it has grown by a step since the last reading, a full collection runs and what survives
 * it, less the stand-ins' bytes then, is a reading. The peak reported is the highest next step
 * over a reading: an upper bound of the invocation's live heap, at most a step above it, whatever
 * V8's collections happened to be doing (the stand-ins' own growth never takes a step). Past
 * {@link GC_LIMIT} collections its used heap itself is read (a looser bound: garbage included).
 * Without `--expose-gc` the used heap is read as it is (garbage included).
 */
class Probe {
  baseHeap = 0;
  peakHeap = 0;
  peakTmp = 0;
  samples = 0;
  collections = 0;
  private lastTmpAt = 0;
  private nextAt = 0;
  private storedAtStart = 0;

  constructor(
    private readonly dir: string,
    private readonly stored: () => number,
  ) {}

  start(): void {
    gc?.();
    this.storedAtStart = this.stored();
    this.baseHeap = heap();
    this.nextAt = this.baseHeap + GC_STEP;
    this.peakHeap = gc ? this.nextAt : this.baseHeap;
    this.peakTmp = folderBytes(this.dir);
    this.lastTmpAt = realMs();
  }

  /** The used heap less what the stand-ins came to hold since the start. */
  private own(): number {
    return heap() - (this.stored() - this.storedAtStart);
  }

  sample(final = false): void {
    this.samples += 1;
    if (!gc) this.peakHeap = Math.max(this.peakHeap, heap());
    else {
      const own = this.own();
      if (this.collections >= GC_LIMIT) this.peakHeap = Math.max(this.peakHeap, own);
      else if (own >= this.nextAt || final) {
        gc();
        this.collections += 1;
        const live = this.own();
        this.nextAt = live + Math.max(GC_STEP, GC_SHARE * (live - this.baseHeap));
        // Until the next reading the invocation's live heap stays under its used heap, which
        // stays under the next threshold: that threshold bounds the peak.
        this.peakHeap = Math.max(this.peakHeap, this.nextAt);
      }
    }
    const at = realMs();
    if (final || at - this.lastTmpAt >= 5) {
      this.lastTmpAt = at;
      this.peakTmp = Math.max(this.peakTmp, folderBytes(this.dir));
    }
  }
}

/**
 * The invocation's own heap growth between two full collections while it is replayed: 8 MB, or
 * a quarter of its growth so far when that is more.
 */
const GC_STEP = 8 * 1024 * 1024;
const GC_SHARE = 0.25;
/**
 * Full collections one replay may force (each takes the process's whole heap, the snapshots
 * included): past them the used heap, garbage included, is the bound.
 */
const GC_LIMIT = 40;

function heap(): number {
  const stats = getHeapStatistics() as ReturnType<typeof getHeapStatistics> & { external_memory?: number };
  return stats.used_heap_size + (stats.external_memory ?? 0);
}

function realMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}

/** Bytes of the files under `dir` now (a file removed while it is read counts as gone). */
function folderBytes(dir: string): number {
  let total = 0;
  let entries: import('node:fs').Dirent[];
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return 0;
  }
  for (const entry of entries) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) total += folderBytes(path);
    else {
      try {
        total += statSync(path).size;
      } catch {}
    }
  }
  return total;
}

function round(n: number): number {
  return Math.round(n * 100) / 100;
}
