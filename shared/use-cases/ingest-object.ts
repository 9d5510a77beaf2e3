import { readsInChunks } from '../lib/datasets/chunks.js';
import {
  type DatasetFormat,
  datasetReading,
  parquetRowGroups,
  type ReadOptions,
  readRows,
} from '../lib/datasets/read.js';
import { blobSource } from '../lib/datasets/source.js';
import { rejectionKey, reportPrefixOf, routeKey, suiteKey, sweepPrefixOf } from '../lib/layout/bucket.js';
import {
  checkDatasetKey,
  checkPromptPaths,
  promptPathProblem,
  SuitePathError,
  suiteDatasetKey,
} from '../lib/layout/suite-paths.js';
import {
  promptScopePrefix,
  promptScopeProblem,
  promptUploadOf,
  readsUpload,
  ScopedPromptStore,
} from '../lib/layout/tenancy.js';
import { contentHash, PROMPT_PREFIX } from '../lib/prompts/prompts.js';
import { AssayError, InputError, RunExistsError, SweepExistsError } from '../model/errors.js';
import type { RunRecord } from '../model/model.js';
import { isSweep } from '../model/variants.js';
import type { BlobStore, PromptIndex, RunHistory, SweepStore } from '../ports/ports.js';
import { taskFor } from '../registry/registry.js';
import { parseSuite, type Suite, variantSuites } from '../registry/suite.js';
import { prepareSweep } from '../sweeps/sweep.js';
import { type DeployLimits, deployLimited } from './deploy-limits.js';
import {
  type IngestChunkDeps,
  ingestChunk,
  parquetRanges,
  readsInRanges,
  sendParquetRanges,
} from './ingest-chunk/index.js';
import { prepareRun } from './prepare-run.js';
import { type StartRunOutcome, startRun } from './start-run.js';

/**
 * What ingest needs. The dataset is read from the bucket: a file up to `chunkBytes` in one pass
 * here, a larger one in chunks by later invocations (see ingest-chunk/), this one creating
 * the run and cutting it into ranges (or handing on its first chunk). The dataset is looked at
 * before the run record is written, so a missing dataset never leaves a run stuck in `ingesting`.
 */
export interface IngestObjectDeps extends IngestChunkDeps {
  /** The bucket (suites/ and datasets/ keys). */
  bucket: BlobStore;
  /**
   * Serves `prompts/<path>`: the prompts bundled with the code. Each suite reads the bucket's
   * overrides in its scope over them (`prompts/<team>/<path>`, or `prompts/<path>` for a suite
   * of no team: see tenancy.ts).
   */
  prompts: BlobStore;
  /**
   * The deployment's teams (`ASSAY_TEAMS`): each owns the suites named `<team>` or `<team>-…`,
   * whose prompts are read from, and re-run by, `prompts/<team>/` only. None by default: every
   * suite reads `prompts/<path>`.
   */
  teams?: readonly string[];
  /**
   * Builds the suite's providers, so an upload whose backend has no key is refused here, as
   * the local CLI refuses to start, instead of failing every item in the workers.
   */
  checkBackends(suite: Suite): Promise<void>;
  /** Kept current on every suite ingest; read when a prompt file changes. */
  promptIndex: PromptIndex;
  /** The suites' runs: a prompt change re-runs the latest on the same dataset. */
  history: RunHistory;
  /** A suite with variants starts a sweep: its record says which runs make it. */
  sweeps: SweepStore;
  /**
   * Folders under `datasets/` every suite may read besides its own `datasets/<name>/`
   * (`ASSAY_DATASET_PREFIXES`, each ending in `/`); none by default.
   */
  datasetPrefixes?: readonly string[];
}

export interface UploadedObject {
  /** The decoded key. */
  key: string;
  /**
   * Identifies this upload (S3: ETag + sequencer). A redelivered event carries the same
   * version and maps to the same run; a new upload of the same key is a new run.
   */
  version: string;
}

export type IngestOutcome =
  | {
      status: DatasetStart['status'];
      runId: string;
      suiteName: string;
      datasetKey: string;
      start: DatasetStart;
    }
  /** A suite with variants: a run per variant, and the sweep that compares them. */
  | { status: 'sweep'; sweepId: string; suiteName: string; datasetKey: string; runs: SweepRunOutcome[] }
  /** A prompt file changed: one outcome per suite that reads it. */
  | { status: 'prompt'; path: string; hash?: string; suites: PromptChangeOutcome[] }
  /** Nothing to run: a suite whose dataset is not uploaded yet (`no-dataset`), or a key outside the layout (`unknown-key`). */
  | { status: 'ignored'; why: 'no-dataset' | 'unknown-key'; reason: string }
  /** The upload cannot start a run and retrying will not change that: the user must fix something. */
  | { status: 'rejected'; reason: string; suiteName?: string };

/**
 * An object landed in the bucket: starts the run it asks for. A suite upload runs the suite on
 * its dataset; a dataset upload runs `suites/<name>.json` on that file. Problems with the
 * upload itself come back as `rejected` (retrying cannot fix them); storage and queue errors
 * throw, so the event is retried, and a retried event resumes the same run.
 */
export async function ingestObject(deps: IngestObjectDeps, object: UploadedObject): Promise<IngestOutcome> {
  const outcome = await ingestUpload(deps, object);
  // Rejected once, for good: the reason is kept where the suite's reports go, beside the log line.
  if (outcome.status === 'rejected' && outcome.suiteName !== undefined) {
    const record: RejectedUpload = { key: object.key, version: object.version, reason: outcome.reason };
    await deps.bucket.put(
      rejectionKey(outcome.suiteName),
      `${JSON.stringify(record, null, 2)}\n`,
      'application/json',
    );
  }
  return outcome;
}

/** The last upload of a suite that could not start a run, and why (`reports/<name>/rejected.json`). */
export interface RejectedUpload {
  key: string;
  version: string;
  reason: string;
}

async function ingestUpload(deps: IngestObjectDeps, object: UploadedObject): Promise<IngestOutcome> {
  const route = routeKey(object.key);
  switch (route.kind) {
    case 'prompt': {
      // A key no suite can name as its prompt (`prompts/a/../b.md`): nothing reads it.
      const problem = promptPathProblem(route.path);
      if (problem !== undefined) return { status: 'rejected', reason: `${problem}: no suite can read it` };
      return reevaluatePrompt(deps, route.path);
    }
    case 'other':
      return {
        status: 'ignored',
        why: 'unknown-key',
        reason: 'not a suite (suites/<name>.json) or dataset (datasets/<name>/<file>)',
      };
  }

  const { suiteName } = route;
  const loaded = await loadSuite(deps.bucket, suiteName, deps.limits);
  if ('rejected' in loaded) return { status: 'rejected', reason: loaded.rejected, suiteName };
  const { suite } = loaded;

  let datasetKey: string;
  let datasetVersion: string;
  if (route.kind === 'dataset') {
    datasetKey = object.key;
    datasetVersion = object.version;
  } else {
    // Only the suite's own folder, or one the deployment shares: never another suite's data.
    let key: string;
    try {
      key = suiteDatasetKey(suite, deps.datasetPrefixes);
    } catch (error) {
      if (error instanceof AssayError && error.permanent)
        return { status: 'rejected', reason: error.message, suiteName };
      throw error;
    }
    datasetKey = key;
    // The suite was uploaded: its upload identifies the run (a new suite upload is a new run).
    datasetVersion = `suite:${object.version}`;
  }

  let reading: ReturnType<typeof datasetReading>;
  try {
    reading = datasetReading(datasetKey, suite.dataset);
  } catch (error) {
    return { status: 'rejected', reason: (error as Error).message, suiteName };
  }

  if (isSweep(suite)) {
    return ingestSweep(
      deps,
      suite,
      { key: datasetKey, version: datasetVersion, ...reading },
      route.kind === 'suite',
    );
  }

  const run = await prepareChecked(deps, suite, datasetKey, datasetVersion);
  if ('rejected' in run) return { status: 'rejected', reason: run.rejected, suiteName };

  // The suite reads exactly these prompts now: a later change to one of them re-runs it.
  await deps.promptIndex.setSuitePrompts(suite.name, Object.keys(run.prompts));

  const start = await startOnDataset(deps, run, { key: datasetKey, version: datasetVersion, ...reading });
  if (start && 'unreadable' in start) return { status: 'rejected', reason: start.unreadable, suiteName };
  if (!start) {
    return route.kind === 'suite'
      ? {
          status: 'ignored',
          why: 'no-dataset',
          reason: `suite saved; no dataset at ${datasetKey} yet: uploading one there (or any file under datasets/${suiteName}/) starts a run`,
        }
      : { status: 'rejected', reason: `${datasetKey} is gone (deleted after the upload?)`, suiteName };
  }
  return { status: start.status, runId: run.runId, suiteName, datasetKey, start };
}

/** How a run started on its dataset: read in one pass here, or handed on a chunk at a time. */
export type DatasetStart =
  | StartRunOutcome
  /**
   * The dataset is read a chunk at a time by later invocations; the run's first chunk is on its
   * way. `readFailure`: the pass that split it here met a row it cannot read (see startRun).
   */
  | { status: 'chunked'; runId: string; bytes: number; readFailure?: string };

/**
 * Starts `run` on its dataset: a file up to `chunkBytes` (a gzipped one up to a sixteenth of
 * that, and a sampled run's file that no reader can start in the middle of) in one pass here;
 * a larger one by creating the run and cutting it into ranges, or splitting it into chunk
 * objects, or handing its first chunk to another invocation. Undefined when the dataset does
 * not exist.
 */
async function startOnDataset(
  deps: IngestObjectDeps,
  run: RunRecord,
  dataset: DatasetRef,
): Promise<DatasetStart | { unreadable: string } | undefined> {
  try {
    const start = await startReading(deps, run, dataset);
    // The file stopped being readable at a row (a reader's limit, a broken file): the run ended
    // there, reported, with that row failed; the upload is rejected with the reason too.
    if (start && 'readFailure' in start && start.readFailure) return { unreadable: start.readFailure };
    return start;
  } catch (error) {
    // A file no reader can read (a corrupt gzip stream, a .json file that is not an array, a
    // broken Parquet file): the user must upload it again; a retry would fail the same way.
    if (error instanceof InputError) return { unreadable: error.message };
    // A value too large or too deep for the runtime (RangeError) comes from the file too.
    if (error instanceof RangeError)
      return { unreadable: `${dataset.key}: cannot be read (${error.message})` };
    throw error;
  }
}

async function startReading(
  deps: IngestObjectDeps,
  run: RunRecord,
  dataset: DatasetRef,
): Promise<DatasetStart | undefined> {
  const object = await deps.bucket.read(dataset.key);
  if (!object) return undefined;
  // The deployment's reader limits, not the suite's: a suite cannot raise them.
  if (deps.readerLimits) dataset = { ...dataset, options: { ...dataset.options, limits: deps.readerLimits } };
  if (dataset.format === 'parquet') {
    // Parquet is read by position (its footer, then a row group at a time): this read is let go.
    await object.body[Symbol.asyncIterator]().return?.();
    const source = blobSource(deps.bucket, dataset.key, object);
    const oneRead = () => startRun(deps, { run, rows: readRows(source, dataset.format, dataset.options) });
    if (object.size <= deps.chunkBytes || !readsInRanges(run, dataset.format, dataset.options))
      return oneRead();
    // In ranges of row groups, read at the same time elsewhere; a file of one range is read
    // here. Its footer is read first: a file no reader can read is refused before any run.
    const ranges = parquetRanges(deps, await parquetRowGroups(source, dataset.options));
    if (ranges.length <= 1) return oneRead();
    await createOnce(deps, run);
    await sendParquetRanges(
      deps,
      { runId: run.runId, key: dataset.key, version: object.version, format: dataset.format },
      object.size,
      ranges,
    );
    return { status: 'chunked', runId: run.runId, bytes: object.size };
  }
  const chunked = readsInChunks(dataset.format, dataset.options);
  // A gzipped file holds many times its size in rows: it is split once it may hold more than a chunk.
  const oneRead = dataset.options.compression === 'gzip' ? deps.chunkBytes / GZIP_EXPANSION : deps.chunkBytes;
  if (object.size <= oneRead || (!chunked && run.suite.run.sample))
    return startRun(deps, { run, rows: readRows(object.body, dataset.format, dataset.options) });
  // Read in chunks, elsewhere: this read is let go.
  await object.body[Symbol.asyncIterator]().return?.();
  await createOnce(deps, run);
  const first = {
    runId: run.runId,
    key: dataset.key,
    version: object.version,
    format: dataset.format,
    chunk: 0,
    start: 0,
    row: 0,
    line: 0,
  };
  // No reader can start in the middle of it: the pass that splits it into chunk objects, read
  // at the same time as ranges are, starts here, sending each chunk's task once it is written.
  // A row it cannot read, met here, rejects the upload with the reason too, as one pass does.
  if (!chunked) {
    const split = await ingestChunk(deps, { ...first, split: true });
    const readFailure = split.status === 'scanned' ? split.unreadable : undefined;
    return {
      status: 'chunked',
      runId: run.runId,
      bytes: object.size,
      ...(readFailure ? { readFailure } : {}),
    };
  }
  // Cut into ranges read at the same time: the pass that finds them starts here, sending the
  // first range's task as soon as its end is found. Else one chunk after another.
  if (readsInRanges(run, dataset.format, dataset.options)) await ingestChunk(deps, { ...first, scan: true });
  else await deps.sendChunk(first);
  return { status: 'chunked', runId: run.runId, bytes: object.size };
}

/**
 * How many times its size a gzipped dataset may hold: CSV and JSON text compress some five to
 * ten times, so one of a sixteenth of a chunk's bytes is read in one pass, a larger one split.
 */
const GZIP_EXPANSION = 16;

/** Creates the run of a dataset read in chunks; a redelivered upload finds it (its chunks are each taken once). */
async function createOnce(deps: IngestObjectDeps, run: RunRecord): Promise<void> {
  await deps.runStore.createRun(run).catch((error: unknown) => {
    if (!(error instanceof RunExistsError)) throw error;
  });
}

export interface SweepRunOutcome {
  variant: string;
  runId: string;
  start: DatasetStart;
}

interface DatasetRef {
  key: string;
  version: string;
  format: DatasetFormat;
  /** The suite's dataset keys, with the compression settled and the key named for errors. */
  options: ReadOptions;
}

/**
 * A sweep: every variant's run is prepared (and its keys checked) before any starts, so one
 * bad variant starts none; then each starts on the dataset as a run of its own, and the sweep
 * record names them. When every run was already done (the same sweep uploaded again, an
 * edited gate), nothing else would aggregate the sweep, so this asks for it.
 */
async function ingestSweep(
  deps: IngestObjectDeps,
  suite: Suite,
  dataset: DatasetRef,
  suiteUpload: boolean,
): Promise<IngestOutcome> {
  const suiteName = suite.name;
  // The cloud's workers take items from a queue in any order and cannot stop a variant early.
  if (suite.gate?.sequential)
    return {
      status: 'rejected',
      reason:
        'gate.sequential: a sequential gate (items in a seeded order, a variant stopped once settled) runs in the local shell only (assay run); the AWS shell cannot stop a variant early yet: drop gate.sequential to run this sweep here',
      suiteName,
    };
  let variants: ReturnType<typeof variantSuites>;
  try {
    variants = variantSuites(suite);
  } catch (error) {
    return { status: 'rejected', reason: (error as Error).message, suiteName };
  }
  const runs: { variant: string; run: RunRecord }[] = [];
  for (const { variant, suite: variantSuite } of variants) {
    const run = await prepareChecked(deps, variantSuite, dataset.key, dataset.version);
    if ('rejected' in run)
      return { status: 'rejected', reason: `variant ${variant.name}: ${run.rejected}`, suiteName };
    runs.push({ variant: variant.name, run });
  }
  await deps.promptIndex.setSuitePrompts(suiteName, [
    ...new Set(runs.flatMap(({ run }) => Object.keys(run.prompts))),
  ]);

  const outcomes: SweepRunOutcome[] = [];
  for (const { variant, run } of runs) {
    const start = await startOnDataset(deps, run, dataset);
    if (start && 'unreadable' in start)
      return { status: 'rejected', reason: `variant ${variant}: ${start.unreadable}`, suiteName };
    if (!start) {
      return suiteUpload && outcomes.length === 0
        ? {
            status: 'ignored',
            why: 'no-dataset',
            reason: `suite saved; no dataset at ${dataset.key} yet: uploading one there (or any file under datasets/${suiteName}/) starts the sweep`,
          }
        : { status: 'rejected', reason: `${dataset.key} is gone (deleted after the upload?)`, suiteName };
    }
    outcomes.push({ variant, runId: run.runId, start });
  }

  const sweep = prepareSweep(
    suite,
    outcomes.map(({ variant, runId }) => ({ variant, runId })),
    { datasetKey: dataset.key, reportPrefix: sweepPrefixOf(suiteName), now: deps.now },
  );
  await deps.sweeps.createSweep(sweep).catch((error: unknown) => {
    // A redelivered upload: the sweep exists already, with these runs.
    if (!(error instanceof SweepExistsError)) throw error;
  });
  const statuses = await Promise.all(outcomes.map(({ runId }) => deps.runStore.getRun(runId)));
  if (statuses.every((run) => run?.status === 'done')) await deps.trigger.triggerSweep(sweep.sweepId);
  return { status: 'sweep', sweepId: sweep.sweepId, suiteName, datasetKey: dataset.key, runs: outcomes };
}

export type PromptChangeOutcome =
  | { suiteName: string; status: DatasetStart['status']; runId: string; previousRunId: string }
  | { suiteName: string; status: 'sweep'; sweepId: string; previousRunId: string }
  | { suiteName: string; status: 'unchanged' | 'never-run' | 'not-reading'; reason: string }
  | { suiteName: string; status: 'rejected'; reason: string };

/**
 * A prompt file landed at `prompts/<key>`: every suite that reads it in its scope (the prompt
 * index, kept to the suites of the key's team: see tenancy.ts) and whose latest run used other
 * content for it runs again on that run's dataset, with the prompts as they are now. A key in
 * team `alpha`'s folder (`alpha/judge/x.md`) is prompt `judge/x.md` of alpha's suites only; any
 * other key is read by the suites of no team alone, so no upload outside a team's folder changes
 * its judges or re-runs its datasets. The new run id derives from the new prompt hashes, so a
 * redelivered event resumes the same run; a prompt re-uploaded with the same content starts nothing.
 */
async function reevaluatePrompt(deps: IngestObjectDeps, key: string): Promise<IngestOutcome> {
  const body = await deps.bucket.get(`${PROMPT_PREFIX}${key}`);
  if (!body) return { status: 'prompt', path: key, suites: [] };
  const hash = contentHash(new TextDecoder().decode(body));
  const teams = deps.teams ?? [];
  const upload = promptUploadOf(key, teams);
  const suites: PromptChangeOutcome[] = [];
  for (const suiteName of await deps.promptIndex.suitesUsing(upload.path)) {
    if (!readsUpload(suiteName, upload, teams)) continue;
    suites.push(await rerunSuite(deps, suiteName, upload.path, hash));
  }
  return { status: 'prompt', path: key, hash, suites };
}

async function rerunSuite(
  deps: IngestObjectDeps,
  suiteName: string,
  path: string,
  hash: string,
): Promise<PromptChangeOutcome> {
  const loaded = await loadSuite(deps.bucket, suiteName, deps.limits);
  if ('rejected' in loaded) return { suiteName, status: 'rejected', reason: loaded.rejected };
  const { suite } = loaded;
  // A sweep's runs are its variants' (`<suite>.<variant>`): the newest of them is its latest.
  const sweep = isSweep(suite);
  const names = sweep ? variantSuites(suite).map((v) => v.suite.name) : [suiteName];
  const latestRuns = (await Promise.all(names.map((name) => deps.history.latestRun(name)))).filter(
    (run): run is RunRecord => run !== undefined,
  );
  const latest = latestRuns.sort((a, b) => b.startedAt.localeCompare(a.startedAt))[0];
  if (!latest) return { suiteName, status: 'never-run', reason: 'the suite has no run yet to re-evaluate' };
  if (latestRuns.every((run) => run.prompts[path]?.hash === hash)) {
    return { suiteName, status: 'unchanged', reason: `run ${latest.runId} already used this content` };
  }
  let reading: ReturnType<typeof datasetReading>;
  try {
    // The deployment's shared folders may have changed since that run.
    checkDatasetKey(suiteName, latest.datasetKey, deps.datasetPrefixes);
    reading = datasetReading(latest.datasetKey, suite.dataset);
  } catch (error) {
    return { suiteName, status: 'rejected', reason: (error as Error).message };
  }
  const version = latest.datasetVersion ?? latest.runId;
  if (sweep) {
    const outcome = await ingestSweep(deps, suite, { key: latest.datasetKey, version, ...reading }, false);
    if (outcome.status === 'sweep')
      return { suiteName, status: 'sweep', sweepId: outcome.sweepId, previousRunId: latest.runId };
    return { suiteName, status: 'rejected', reason: 'reason' in outcome ? outcome.reason : outcome.status };
  }
  const run = await prepareChecked(deps, suite, latest.datasetKey, version);
  if ('rejected' in run) return { suiteName, status: 'rejected', reason: run.rejected };
  await deps.promptIndex.setSuitePrompts(suite.name, Object.keys(run.prompts));
  if (run.prompts[path] === undefined) {
    return { suiteName, status: 'not-reading', reason: `the suite no longer reads ${path}` };
  }
  const start = await startOnDataset(deps, run, { key: latest.datasetKey, version, ...reading });
  if (start && 'unreadable' in start) return { suiteName, status: 'rejected', reason: start.unreadable };
  if (!start) return { suiteName, status: 'rejected', reason: `${latest.datasetKey} is gone` };
  return { suiteName, status: start.status, runId: run.runId, previousRunId: latest.runId };
}

/**
 * The run a suite would start on a dataset version, with its backends' keys checked. A problem
 * no retry can fix (suite, prompts, provider id, missing key) is `rejected`; anything else throws.
 */
async function prepareChecked(
  deps: IngestObjectDeps,
  suite: Suite,
  datasetKey: string,
  datasetVersion: string,
): Promise<RunRecord | { rejected: string }> {
  try {
    // Prompts are keys of the bucket: a path that could leave prompts/ is refused before any read.
    const paths = Object.values(taskFor(suite).promptPaths(suite));
    checkPromptPaths(paths);
    checkPromptScope(suite.name, paths, deps.teams ?? []);
    await deps.checkBackends(suite);
    return await prepareRun({
      suite,
      // The suite's scope in the bucket over the bundled prompts: never another team's folder.
      prompts: new ScopedPromptStore(
        deps.bucket,
        promptScopePrefix(suite.name, deps.teams ?? []),
        deps.prompts,
      ),
      datasetKey,
      datasetVersion,
      reportPrefix: reportPrefixOf(suite.name),
      now: deps.now,
    });
  } catch (error) {
    // A wrong suite, prompt or backend, a missing key: no retry can fix it (see errors.ts).
    if (error instanceof AssayError && error.permanent) return { rejected: error.message };
    throw error;
  }
}

/** Refuses a prompt path of another team's folder (see {@link promptScopeProblem}). */
function checkPromptScope(suiteName: string, paths: readonly string[], teams: readonly string[]): void {
  for (const path of paths) {
    const problem = promptScopeProblem(suiteName, path, teams);
    if (problem !== undefined) throw new SuitePathError(`suite ${suiteName}: ${problem}`);
  }
}

/** The suite uploaded under `suiteName`, as the deployment's limits let it run (see deploy-limits.ts), or why it cannot. */
async function loadSuite(
  bucket: BlobStore,
  suiteName: string,
  limits?: DeployLimits,
): Promise<{ suite: Suite } | { rejected: string }> {
  const key = suiteKey(suiteName);
  const body = await bucket.get(key);
  if (!body) return { rejected: `no suite at ${key}: upload the suite before (or after) its datasets` };
  let suite: Suite;
  try {
    suite = parseSuite(new TextDecoder().decode(body), key);
  } catch (error) {
    return { rejected: (error as Error).message };
  }
  if (suite.name !== suiteName) {
    return {
      rejected: `${key} declares the suite name ${JSON.stringify(suite.name)}: a suite lives at suites/<its name>.json`,
    };
  }
  if (suite.dataset.goldFile !== undefined)
    return {
      rejected: `${key}: dataset.goldFile is merged by a local run (assay run); here the gold comes from the dataset object: upload it with the labels in its gold column, and dataset.partialGold for the rows without`,
    };
  return deployLimited(suite, limits);
}
