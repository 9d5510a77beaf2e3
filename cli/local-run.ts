import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, relative, resolve } from 'node:path';
import { FileLlmCache } from '../shared/adapters/local/file-llm-cache.js';
import { FolderBlobStore, LayeredBlobStore } from '../shared/adapters/local/folder-blob-store.js';
import { LocalAggregateTrigger } from '../shared/adapters/local/local-aggregate-trigger.js';
import { LocalBatchLedger } from '../shared/adapters/local/local-batch-ledger.js';
import { LocalRunHistory } from '../shared/adapters/local/local-run-history.js';
import { LocalRunStore } from '../shared/adapters/local/local-run-store.js';
import { LocalLeaderboard, LocalSweepStore } from '../shared/adapters/local/local-sweeps.js';
import { LocalWorkQueue } from '../shared/adapters/local/local-work-queue.js';
import { MemoryRateLimitStore } from '../shared/adapters/local/memory-rate-limit-store.js';
import { resolveSuiteFile, SuiteFolderStore, warnOnStderr } from '../shared/adapters/local/suite-folder.js';
import { columnList, fileColumns } from '../shared/lib/datasets/columns.js';
import { checkGoldIds, readGoldFile, withGoldLabels } from '../shared/lib/datasets/gold-file.js';
import { readerLimitsFromEnv } from '../shared/lib/datasets/limits.js';
import { datasetReading, type RawRow } from '../shared/lib/datasets/read.js';
import { readDatasetFile } from '../shared/lib/datasets/source.js';
import { requireOnnxRuntime } from '../shared/lib/encoders/onnx.js';
import { EncoderPool } from '../shared/lib/encoders/registry.js';
import { loadPriceTable, withPriceOverride } from '../shared/lib/providers/pricing.js';
import { RateLimiters } from '../shared/lib/providers/rate-limit/limiters.js';
import { ProviderPool } from '../shared/lib/providers/registry.js';
import { InputError, ProviderError } from '../shared/model/errors.js';
import type { ItemMessage, ItemResult, RunRecord } from '../shared/model/model.js';
import type { Completion, LlmProvider } from '../shared/model/provider.js';
import { encodersOf, simulateAnswer, simulateSuite, taskFor } from '../shared/registry/registry.js';
import { parseSuite, type Suite, validateSuite } from '../shared/registry/suite.js';
import type { SequentialRunControl } from '../shared/sweeps/sequential.js';
import { type AggregateOutcome, aggregateRun, writeRunReport } from '../shared/use-cases/aggregate-run.js';
import { type BatchEvent, runBatchLane } from '../shared/use-cases/batch-lane.js';
import { type FinishRunDeps, finishRun } from '../shared/use-cases/finish-run.js';
import { prepareRun } from '../shared/use-cases/prepare-run.js';
import { scoreItem } from '../shared/use-cases/score-item.js';
import { startRun } from '../shared/use-cases/start-run.js';
import { endHalted } from '../shared/use-cases/stop-run.js';
import { withReportHeap } from './heap.js';
import { PACKAGE_ROOT } from './package-root.js';

/** The package root: prompts that ship with Assay live under `<root>/prompts`. */
export { PACKAGE_ROOT };

export interface LocalRunOptions extends RunSettings {
  suitePath: string;
}

/** How a local run goes, whatever its suite and dataset come from. */
export interface RunSettings {
  /** Run folder; default `<runsDir>/<runId>`. */
  outDir?: string;
  /** Where run folders live side by side (default `runs`): the report compares with the suite's previous run there. */
  runsDir?: string;
  /** Replace the suite's backends (e.g. the quickstart's auto-detected one). */
  backends?: string[];
  /** Replace every backend by the simulator of the same name (`openai:gpt-4o` → `sim:gpt-4o`). */
  simulate?: boolean;
  concurrency?: number;
  /** Per model request (ms), overriding the suite's `run.timeoutMs`. */
  timeoutMs?: number;
  sample?: { n: number; seed: number };
  /** A new run even if an identical one exists (different run id). */
  fresh?: boolean;
  env?: NodeJS.ProcessEnv;
  /** Shared LLM cache file; default `$ASSAY_CACHE_DIR/llm-cache.jsonl` or `.assay-cache/`. */
  cachePath?: string;
  pricesPath?: string;
  /** `sync` or `batch` (vendor batch APIs); default: the suite's `run.lane`. */
  lane?: 'sync' | 'batch';
  /** Times each item is scored (independent samples), overriding the suite's `run.repeats`. */
  repeats?: number;
  /** Batch lane: time between polls, overriding the suite's `run.batchPollSeconds` (tests poll fast). */
  batchPollMs?: number;
  onEvent?: (event: RunEvent) => void;
  /**
   * Aborted (Ctrl-C): the run takes no new item, waits a while for the items in flight to be
   * recorded, and ends with {@link RunInterrupted}. Running it again resumes it.
   */
  signal?: AbortSignal;
  /**
   * A sweep's sequential gate (sync lane only): the items are scored in its seeded order, each
   * result is handed to it, and once it has settled the items not yet taken end as
   * `gate_settled` without a model call.
   */
  sequential?: SequentialRunControl;
}

/** How long a stopped run waits for the items in flight to be recorded (ms). */
export const STOP_WAIT_MS = 10_000;

/** A run stopped on request before its end: what it recorded stays, and running it again resumes it. */
export class RunInterrupted extends Error {
  override readonly name = 'RunInterrupted';
  constructor(
    readonly runId: string,
    readonly outDir: string,
    /** Items in flight whose result was still not recorded when the wait ended. */
    readonly abandoned: number,
  ) {
    super(`run ${runId} stopped before its end`);
  }
}

/**
 * What a local run reports as it goes. Every event names its run: one reporter handed to several
 * runs (a sweep's variants, one after another) keeps each run's counts apart.
 */
export type RunEvent = RunEventBody & { runId: string };

/** A run event as the run emits it: its run id is added on the way out. */
type RunEventBody =
  | {
      type: 'started';
      run: RunRecord;
      outDir: string;
      total: number;
      alreadyDone: number;
      queued: number;
      invalidRows: number;
    }
  | { type: 'call'; completion: Completion }
  | { type: 'item'; result: ItemResult }
  | { type: 'batch'; event: BatchEvent }
  | { type: 'finished'; outcome: AggregateOutcome };

/**
 * Where a local run reads `prompts/<path>`: next to the suite first (by real path; a file
 * outside the suite's folder, through `..` or a symlink, is said on stderr), then the prompts
 * Assay ships.
 */
export function promptStoreFor(suiteDir: string): LayeredBlobStore {
  return new LayeredBlobStore([new SuiteFolderStore(suiteDir), new FolderBlobStore(PACKAGE_ROOT)]);
}

/** A file the user named (a suite, a dataset) that is missing, a folder or unreadable. */
export class InputFileError extends InputError {
  override readonly name = 'InputFileError';
}

export const SUITE_FILE = 'a suite file (*.suite.json)';
export const DATASET_FILE = 'a dataset file (.csv or .jsonl)';

/**
 * Checks that `path` is a readable file before anything reads it, so the error names the file
 * (`shown`: as the user wrote it) and what was expected there, never a bare EISDIR or ENOENT.
 */
export async function expectFile(path: string, expected: string, shown = path): Promise<void> {
  let isFolder: boolean;
  try {
    isFolder = (await stat(path)).isDirectory();
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR')
      throw new InputFileError(`${shown}: no such file; give ${expected}`);
    throw new InputFileError(
      `${shown}: cannot be read (${code ?? (error as Error).message}); give ${expected}`,
    );
  }
  if (isFolder) throw new InputFileError(`${shown} is a folder; give ${expected}`);
}

/** A path as the terminal shows it: relative to the working folder when it lies below it. */
function shownPath(path: string): string {
  const rel = relative(process.cwd(), path);
  return rel === '' || rel.startsWith('..') || isAbsolute(rel) ? path : rel;
}

export async function loadSuiteFile(path: string): Promise<Suite> {
  await expectFile(path, SUITE_FILE);
  return parseSuite(await readFile(path, 'utf8'), path);
}

async function fileHash(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** The suite as this run uses it: the command line's backends, concurrency, sample and `--simulate` applied. */
export function applySettings(suite: Suite, settings: RunSettings): Suite {
  let out = suite;
  if (settings.backends) out = { ...out, backends: settings.backends };
  if (settings.simulate) out = simulateSuite(out);
  if (settings.concurrency) out = { ...out, run: { ...out.run, concurrency: settings.concurrency } };
  if (settings.timeoutMs) out = { ...out, run: { ...out.run, timeoutMs: settings.timeoutMs } };
  if (settings.sample) out = { ...out, run: { ...out.run, sample: settings.sample } };
  if (settings.lane) out = { ...out, run: { ...out.run, lane: settings.lane } };
  if (settings.repeats !== undefined) {
    // One repeat is the suite without the key: the same run (and run id) as a suite that never set it.
    const { repeats: _, ...rest } = out.run;
    out = { ...out, run: settings.repeats > 1 ? { ...rest, repeats: settings.repeats } : rest };
  }
  return out;
}

/**
 * The local shell: a folder as the bucket, an in-process pool as the queue, an append-only
 * log as the run store. Running the same suite on the same data again resumes the run.
 */
export async function runLocal(options: LocalRunOptions): Promise<LocalRunOutcome> {
  const suitePath = resolve(options.suitePath);
  const suite = await loadSuiteFile(suitePath);
  return runSuite(suite, dirname(suitePath), await datasetFileOf(suite, dirname(suitePath)), options);
}

/** The suite's dataset file (`dataset.path`, relative to the suite's folder) as a run's source. */
export async function datasetFileOf(suite: Suite, suiteDir: string): Promise<DatasetSource> {
  const named = resolve(suiteDir, suite.dataset.path);
  await expectFile(
    named,
    `${DATASET_FILE} as dataset.path of suite ${suite.name}`,
    `dataset ${shownPath(named)}`,
  );
  // Read by its real path; a file outside the suite's folder is read, and said on stderr.
  const real = await resolveSuiteFile(suiteDir, suite.dataset.path);
  if (real?.outside) warnOnStderr(`dataset.path of suite ${suite.name}`, real.path);
  const datasetPath = real?.path ?? named;
  // Its format and its name in the reports are the path the suite gave; the readers' limits are
  // the machine's (ASSAY_MAX_RECORD_BYTES…, see limits.ts), never the suite's.
  const reading = datasetReading(named, suite.dataset);
  const { format } = reading;
  const options = { ...reading.options, limits: readerLimitsFromEnv(process.env) };
  const source: DatasetSource = {
    key: named,
    version: await fileHash(datasetPath),
    bytes: (await stat(datasetPath)).size,
    rows: () => readDatasetFile(datasetPath, { ...options, format }),
    columns: () => fileColumns(datasetPath, format, options),
  };
  return suite.dataset.goldFile === undefined ? source : withGoldFile(suite, suiteDir, source);
}

/**
 * The dataset with `dataset.goldFile`'s labels as its gold, by item id (see gold-file.ts): its
 * version is the dataset's and the gold file's together, so new labels make a new run. A label
 * whose id the dataset does not have is an error, before anything runs.
 */
async function withGoldFile(suite: Suite, suiteDir: string, dataset: DatasetSource): Promise<DatasetSource> {
  const named = resolve(suiteDir, suite.dataset.goldFile!);
  await expectFile(
    named,
    `a CSV of id,label as dataset.goldFile of suite ${suite.name}`,
    `gold file ${shownPath(named)}`,
  );
  const path = (await resolveSuiteFile(suiteDir, suite.dataset.goldFile!))?.path ?? named;
  const shown = `dataset.goldFile ${shownPath(named)}`;
  const labels = await readGoldFile(readDatasetFile(path, { format: 'csv' }), shown);
  const { columns } = suite.dataset;
  if (Array.isArray(columns.gold))
    throw new InputError(
      `${shown}: a gold file is one label an item; dataset.columns.gold names several annotators`,
    );
  const where = {
    id: columns.id ?? 'id',
    gold: (columns.gold as string | undefined) ?? taskFor(suite).suite.goldColumns ?? ['gold'],
  };
  await checkGoldIds(dataset.rows(), labels, where, shown);
  const version = createHash('sha256')
    .update(`${dataset.version}\n${await fileHash(path)}`)
    .digest('hex');
  return { ...dataset, version, rows: () => withGoldLabels(dataset.rows(), labels, where) };
}

/**
 * A dataset file from this size on is read twice by the ingest (duplicate ids first): an index of
 * every id costs about 24 bytes an item, which matters from hundreds of thousands of rows, and
 * the extra pass delays the first request by the time it takes to read the file.
 */
const READ_TWICE_FROM_BYTES = 16 * 1024 * 1024;

/** Where a run's rows come from: a dataset file, or files joined (`assay score`). */
export interface DatasetSource {
  /** Shown in reports; re-runs read the same. */
  key: string;
  /** Identifies the content: the same suite on the same version resumes. */
  version: string;
  /** The file's size, when the rows are one file's. */
  bytes?: number;
  rows(): AsyncIterable<RawRow>;
  /** The columns its file offers (a CSV's header), to say which column a suite names is not there. */
  columns?(): Promise<string[]>;
  /** Where outputs given with the rows come from, for the screen and the reports (`predictions from preds.csv`). */
  predictions?: string;
}

/** Runs a suite (already loaded) on a dataset source in the local shell. */
export async function runSuite(
  loaded: Suite,
  suiteDir: string,
  dataset: DatasetSource,
  options: RunSettings,
): Promise<LocalRunOutcome> {
  const env = options.env ?? process.env;
  const suite = applySettings(loaded, options);
  const prompts = promptStoreFor(suiteDir);
  // A run with a budget and a backend without a price is refused here, before anything is written.
  const table = loadPriceTable(options.pricesPath, env);
  const prepare = (datasetVersion: string) =>
    prepareRun({ suite, prompts, datasetKey: dataset.key, datasetVersion, reportPrefix: '', prices: table });
  const prepared = options.fresh
    ? await prepare(freshVersion(dataset.version))
    : ((options.outDir === undefined
        ? await latestSameRun(options.runsDir ?? 'runs', dataset.version, prepare)
        : undefined) ?? (await prepare(dataset.version)));
  // A backend without its key (or an unknown vendor) fails here, before anything is written.
  // The suite's own prices (run.prices) over the table: what its calls cost.
  const prices = withPriceOverride(table, prepared.suite.run.prices, "the suite's run.prices");
  const providers = new ProviderPool({ env, prices, simulator: simulateAnswer });
  // Outputs the dataset gives call no model unless a scorer grades with one: their backends are
  // built when first called, so scoring given outputs needs no key.
  const given = prepared.suite.dataset.columns.output !== undefined;
  if (!given) providers.require(prepared.suite.backends, prepared.suite.sim);
  const providerFor = (backend: string, r: RunRecord) => {
    const build = () => providers.get(backend, r.suite.sim, r.suite.run.timeoutMs);
    return given ? builtWhenCalled(build, backend) : build();
  };
  // The AWS SDK loads only if an ONNX model is read from S3.
  const s3 = async () => (await import('../shared/adapters/aws/clients.js')).createAwsClients(env).s3;
  const encoders = new EncoderPool({ env, prices, s3 });
  const neededEncoders = encodersOf(prepared.suite);
  encoders.require(neededEncoders);
  // Local ONNX models need the optional onnxruntime-node: a missing one is said once, here.
  if (neededEncoders.some((e) => e.id.startsWith('onnx:'))) await requireOnnxRuntime();
  const limiters = processLimiters(env);

  const outDir = resolve(options.outDir ?? join(options.runsDir ?? 'runs', prepared.runId));
  const runStore = new LocalRunStore(outDir, { checkSuite: validateSuite });
  const existing = await runStore.getRun(prepared.runId);
  // Outputs the dataset gives are named by where they come from, never by a backend.
  const predictions = given ? (dataset.predictions ?? givenColumnSource(prepared.suite, dataset)) : undefined;
  // A resumed run keeps its record, with this invocation's run settings (a higher budget…).
  const run = {
    ...(existing ? { ...existing, suite: { ...existing.suite, run: prepared.suite.run } } : prepared),
    ...(predictions ? { predictions } : {}),
  };
  const emit = (event: RunEventBody) => options.onEvent?.({ ...event, runId: run.runId });
  const cache = new FileLlmCache(
    options.cachePath ?? join(env.ASSAY_CACHE_DIR ?? '.assay-cache', 'llm-cache.jsonl'),
  );
  // The use-cases ask for the run's aggregation here; the runner takes the request once its queue drains.
  const trigger = new LocalAggregateTrigger();
  const deps = {
    runStore,
    trigger,
    cache,
    run,
    providerFor,
    encoders,
    onTransientError: 'fail' as const,
    limiters,
    prices: table,
    onCall: (completion: Completion) => emit({ type: 'call', completion }),
  };
  // Ingest and scoring run side by side through a bounded queue: the dataset is read as fast
  // as the workers take items, never held whole. The total is known when ingest ends.
  const concurrency = run.suite.run.concurrency;
  const queue = new LocalWorkQueue(Math.max(2 * concurrency, QUEUE_MIN_CAPACITY));
  // A stop request fails the queue: ingest stops reading, the workers take no new item.
  const inFlight = new Set<Promise<unknown>>();
  let stopping = false;
  const stop = () => {
    stopping = true;
    queue.fail(new Error('the run was stopped'));
  };
  if (options.signal?.aborted) stop();
  else options.signal?.addEventListener('abort', stop, { once: true });
  const ingest = (async () => {
    // A large file is read twice, its duplicate ids first, so that the ingest's index of every id
    // is let go before scoring (see startRun); a small one is read once, its first request sooner.
    const rows = (dataset.bytes ?? 0) >= READ_TWICE_FROM_BYTES ? dataset.rows : dataset.rows();
    const started = await startRun({ runStore, queue, trigger }, { run, rows, resume: true });
    if (started.status === 'duplicate') throw new Error('unreachable: a local run resumes');
    queue.close();
    emit({
      type: 'started',
      run,
      outDir,
      total: started.total,
      // Items scored before (a resumed run): the invalid rows are recorded, never queued, never done before.
      alreadyDone: started.total - started.queued - started.invalidRows,
      queued: started.queued,
      invalidRows: started.invalidRows,
    });
  })();
  const work =
    run.suite.run.lane === 'batch'
      ? (async () => {
          // The batch lane runs rounds over every pending item: it takes them all first.
          const messages: ItemMessage[] = [];
          for await (const message of queue) messages.push(message);
          await runBatchLane({
            deps,
            messages,
            each: (items, each) => pool(items, concurrency, each),
            ledger: new LocalBatchLedger(outDir),
            pollIntervalMs: options.batchPollMs ?? run.suite.run.batchPollSeconds * 1000,
            onResult: (result) => emit({ type: 'item', result }),
            onBatch: (event) => emit({ type: 'batch', event }),
          });
        })()
      : options.sequential
        ? sequentialLane(options.sequential)
        : pool(queue, concurrency, score);
  async function score(message: ItemMessage): Promise<void> {
    const scoring = scoreItem(deps, message);
    inFlight.add(scoring);
    try {
      const { result } = await scoring;
      options.sequential?.record(result);
      emit({ type: 'item', result });
    } finally {
      inFlight.delete(scoring);
    }
  }
  /**
   * Every pending item in the gate's order, taken while the gate is unsettled; then the rest end
   * unscored. The order needs every item: they are all read (and held, as the batch lane holds
   * them) before the first is scored.
   */
  async function sequentialLane(control: SequentialRunControl): Promise<void> {
    const messages: ItemMessage[] = [];
    for await (const message of queue) messages.push(message);
    const done: ItemResult[] = [];
    for await (const result of runStore.results(run.runId)) done.push(result);
    const ordered = control.begin(messages, done);
    let next = 0;
    const taken = function* () {
      while (next < ordered.length && control.settled() === undefined) yield ordered[next++]!;
    };
    await pool(taken(), concurrency, score);
    const failure = control.settled();
    if (!failure) return;
    for (const message of ordered.slice(next)) {
      const { result } = await endHalted({ runStore, trigger }, message, failure);
      emit({ type: 'item', result });
    }
  }
  try {
    // Whichever side fails first stops the other (a full queue would otherwise wait forever).
    await Promise.all([
      ingest.catch((error) => {
        queue.fail(error);
        throw error;
      }),
      work.catch((error) => {
        queue.fail(error);
        throw error;
      }),
    ]);
  } catch (error) {
    if (!stopping) throw error;
    // Stopped: the items being scored get a bounded wait to be recorded; the rest resume later.
    const settled = Promise.allSettled([...inFlight]);
    let timer: NodeJS.Timeout | undefined;
    const waited = await Promise.race([
      settled.then(() => true),
      new Promise<false>((done) => {
        timer = setTimeout(() => done(false), STOP_WAIT_MS);
      }),
    ]);
    clearTimeout(timer);
    throw new RunInterrupted(run.runId, outDir, waited ? 0 : inFlight.size);
  } finally {
    options.signal?.removeEventListener('abort', stop);
  }

  const reportDeps = {
    runStore,
    reports: new FolderBlobStore(outDir),
    history: new LocalRunHistory(dirname(outDir), validateSuite),
  };
  // The run is aggregated when it asked to be (its last result, or ingest finding it complete);
  // a run that was already aggregated (run again after it finished) just gets its report rebuilt.
  const asked = trigger.take().some((request) => 'runId' in request && request.runId === run.runId);
  const counters = await runStore.counters(run.runId);
  const outcome = await withReportHeap(counters?.total ?? 0, async () => {
    const aggregated = asked ? await aggregateRun(reportDeps, run.runId) : undefined;
    return aggregated?.status === 'written' ? aggregated : await writeRunReport(reportDeps, run.runId);
  });
  // A run in a runs folder joins its leaderboard and finishes the sweeps it completes there;
  // a run given its own folder (`--out`) stays out of any runs folder's leaderboard.
  if (options.outDir === undefined) await finishRun(finishDeps(dirname(outDir), outDir), run.runId, outcome);
  emit({ type: 'finished', outcome });
  const unscorable =
    outcome.report.counts.scored === 0 ? await whyNothingScored(outDir, run, dataset) : undefined;
  return { outDir, run, outcome, ...(unscorable ? { unscorable } : {}) };
}

/** A `--fresh` run's dataset version: the dataset's, then `:` and the time it was started (ms). */
const freshVersion = (version: string) => `${version}:${Date.now()}`;
const isFreshOf = (runVersion: string | undefined, version: string) =>
  runVersion?.startsWith(`${version}:`) === true && /^\d+$/.test(runVersion.slice(version.length + 1));

/**
 * The newest run in `runsDir` of this suite, prompts and dataset version: the run itself, or a
 * `--fresh` run of it started later. Running the same thing again resumes (or just reports)
 * that one, never an older run a fresh one was meant to replace.
 */
async function latestSameRun(
  runsDir: string,
  datasetVersion: string,
  prepare: (datasetVersion: string) => Promise<RunRecord>,
): Promise<RunRecord | undefined> {
  const history = new LocalRunHistory(resolve(runsDir), validateSuite, () => {});
  const same = (await history.runs())
    .map(({ run }) => run)
    .filter((run) => run.datasetVersion === datasetVersion || isFreshOf(run.datasetVersion, datasetVersion));
  // Newest first: the first whose id this suite and these prompts give on its dataset version.
  for (const run of same) {
    const again = await prepare(run.datasetVersion!);
    if (again.runId === run.runId) return again;
  }
  return undefined;
}

/** Outputs a suite maps from a dataset column: `predictions from data.csv (column pred)`. */
function givenColumnSource(suite: Suite, dataset: DatasetSource): string {
  const column = suite.dataset.columns.output;
  const named =
    typeof column === 'string'
      ? column.startsWith('assay:')
        ? ''
        : ` (column ${column})`
      : Array.isArray(column)
        ? ` (columns ${column.join(', ')})`
        : '';
  return `predictions from ${basename(dataset.key)}${named}`;
}

/** What follows a finished run in the local shell: the runs folder's leaderboard and sweeps. */
function finishDeps(runsDir: string, outDir: string): FinishRunDeps {
  const sweeps = new LocalSweepStore(runsDir);
  return {
    runs: new LocalRunHistory(runsDir, validateSuite),
    reports: new FolderBlobStore(outDir),
    leaderboard: new LocalLeaderboard(runsDir, validateSuite),
    sweeps,
    sweepFiles: (sweepId) => new FolderBlobStore(sweeps.dirOf(sweepId)),
  };
}

export interface LocalRunOutcome {
  outDir: string;
  run: RunRecord;
  outcome: AggregateOutcome;
  /**
   * Set when no item could be scored (every row invalid, a column missing, an empty dataset,
   * every call failed): why, with the first failed rows. The command ends with an error on it.
   */
  unscorable?: string;
}

/** Failed items shown on screen when a run scored nothing (all of them are in errors.txt). */
const FIRST_FAILED = 5;

/**
 * Columns a suite maps that the dataset's header lacks: `role → column`. A dot path into a
 * column the file has is not one of them (whether it resolves is each row's matter), and a
 * list of columns is checked column by column.
 */
export function missingColumns(
  mapped: Record<string, unknown>,
  columns: readonly string[],
): { role: string; column: string }[] {
  if (columns.length === 0) return [];
  const has = (name: string) =>
    columns.includes(name) || columns.some((column) => name.startsWith(`${column}.`));
  return Object.entries(mapped)
    .flatMap(([role, value]) =>
      (typeof value === 'string' ? [value] : Array.isArray(value) ? value : [])
        .filter((column): column is string => typeof column === 'string')
        .map((column) => ({ role, column })),
    )
    .filter(({ column }) => !column.startsWith('assay:') && !has(column));
}

/** Why a run scored nothing, for the screen: the dataset's columns, and the first failed rows. */
export async function whyNothingScored(
  outDir: string,
  run: RunRecord,
  dataset: DatasetSource,
): Promise<string> {
  const columns = (await dataset.columns?.().catch(() => undefined)) ?? [];
  const lines: string[] = [];
  const failed: ItemResult[] = [];
  let items = 0;
  for await (const result of new LocalRunStore(outDir, { checkSuite: validateSuite }).results(run.runId)) {
    items += 1;
    if (result.status === 'scored') continue;
    failed.push(result);
    failed.sort((a, b) => a.row - b.row || a.itemId.localeCompare(b.itemId));
    if (failed.length > FIRST_FAILED) failed.pop();
  }
  if (items === 0) {
    lines.push(
      `nothing was scored: the dataset ${dataset.key} has no rows${columns.length > 0 ? ` (only a header: ${columnList(columns)})` : ''}`,
    );
    return lines.join('\n');
  }
  lines.push(`nothing was scored: all ${items} items failed (errors.txt has each one)`);
  for (const { role, column } of missingColumns(run.suite.dataset.columns, columns)) {
    lines.push(
      `  the suite names column ${JSON.stringify(column)} (${role}) but the dataset has no such column; its columns: ${columnList(columns)}`,
    );
  }
  lines.push(`first failed rows (of ${items}):`);
  for (const result of failed) {
    const { kind, message } = result.failure ?? { kind: result.status, message: '' };
    // An invalid row's message names its row already.
    const text = message.replace(new RegExp(`^row ${result.row}: `), '');
    lines.push(
      `  row ${result.row}: ${kind === 'invalid_row' ? `${text} (invalid row)` : `${kind}: ${text}`}`,
    );
  }
  return lines.join('\n');
}

/**
 * A backend built on first use: one that cannot be built (a missing key) fails the calls made to
 * it, saying why, instead of the run that may never call it.
 */
export function builtWhenCalled(build: () => LlmProvider, id: string): LlmProvider {
  try {
    return build();
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    return {
      id,
      simulated: false,
      complete: () => Promise.reject(new ProviderError(message, 'auth', id)),
    };
  }
}

/**
 * The rate limiters of this process, by the ASSAY_LIMITS they were built with: every local run
 * in the process (a sweep's variants, one after another) shares one limiter per model. A bad
 * ASSAY_LIMITS fails here, before the run writes anything.
 */
const limitersBySpec = new Map<string, RateLimiters>();
/** The buckets themselves are per model whatever the limiters were built with. */
const processBuckets = new MemoryRateLimitStore();
function processLimiters(env: NodeJS.ProcessEnv): RateLimiters {
  const spec = env.ASSAY_LIMITS ?? '';
  let limiters = limitersBySpec.get(spec);
  if (!limiters) {
    limiters = new RateLimiters({ store: processBuckets, env: { ASSAY_LIMITS: spec } });
    limitersBySpec.set(spec, limiters);
  }
  return limiters;
}

/** Messages buffered between ingest and the workers, at least (twice the concurrency otherwise). */
const QUEUE_MIN_CAPACITY = 256;

/** Runs `work` over `items` (read lazily, shared by the lanes) with at most `size` in flight. */
export async function pool<T>(
  items: Iterable<T> | AsyncIterable<T>,
  size: number,
  work: (item: T) => Promise<void>,
): Promise<void> {
  const source =
    Symbol.asyncIterator in items ? items[Symbol.asyncIterator]() : (items as Iterable<T>)[Symbol.iterator]();
  const lanes = Array.from({ length: Math.max(1, size) }, async () => {
    for (;;) {
      const next = await source.next();
      if (next.done) return;
      await work(next.value);
    }
  });
  await Promise.all(lanes);
}
