import { createHash } from 'node:crypto';

/**
 * The bucket layout of the AWS shell, in one place: what an uploaded key means, where a run's
 * files go, and which prefixes each part of the pipeline reads or writes. The CDK stack (event
 * notifications, IAM prefixes, lifecycle rules, prompt sync), the moto stand-in, the functions
 * and the local cloud all take their prefixes from here.
 *
 * ```
 * suites/<name>.json            a suite; its upload runs it on its dataset
 * datasets/<name>/<file>        a dataset of suite <name>; its upload runs suites/<name>.json on it;
 *                               suite <name> reads datasets only here (and under the deployment's
 *                               shared folders, ASSAY_DATASET_PREFIXES: see suite-paths.ts)
 * prompts/<path>                prompt files (override the ones bundled with the functions);
 *                               a changed one re-runs the suites that read it
 * reports/<name>/<runId>/       report files of a run (a sweep variant's runs: reports/<name>.<variant>/<runId>/)
 * reports/<name>/sweeps/<id>/   sweep.json and sweep.txt of a sweep
 * reports/leaderboard.json      every finished run, kept current by the aggregator (and .txt)
 * spill/<runId>/…               item messages too big for the queue; a sampled ingest's state;
 *                               what the steps of an aggregation in parts hand each other
 * results/<runId>/…             results too large for a DynamoDB item, which the run store's
 *                               item refers to; kept as long as the run's results are
 * ```
 *
 * Every prefix is one path segment ending in `/` (the stack's IAM statements are scoped by them).
 */

export const SUITES_PREFIX = 'suites/';
export const DATASETS_PREFIX = 'datasets/';
/** Prompt files: `prompts/<path>`, in the bucket and in any BlobStore that serves prompts. */
export const PROMPT_PREFIX = 'prompts/';
export const REPORTS_PREFIX = 'reports/';
/** Item bodies too large for a queue message, written by ingest and read by worker, dead-letter and batch poller. */
export const SPILL_PREFIX = 'spill/';
/**
 * Result bodies too large for a DynamoDB item, written by whatever records results (worker,
 * dead-letter, ingest) and read by whatever reads them. Not under spill/: they never expire.
 */
export const RESULTS_PREFIX = 'results/';
/** Where the leaderboard files (`leaderboard.json`, `leaderboard.txt`) go. */
export const LEADERBOARD_PREFIX = REPORTS_PREFIX;

/** Prefixes whose ObjectCreated events go to the events queue: an upload there starts work. */
export const UPLOAD_PREFIXES = [DATASETS_PREFIX, SUITES_PREFIX, PROMPT_PREFIX] as const;

/**
 * How long spilled item bodies are kept, days. Longer than the retention of the items
 * dead-letter queue (see queues.ts), whose consumer may still have to read a spilled body.
 */
export const SPILL_EXPIRATION_DAYS = 21;

/** Key prefix of the bucket's server access logs, in the separate access-log bucket. */
export const ACCESS_LOG_PREFIX = 'assay-bucket/';

/** What an object key in the bucket stands for. */
export type ObjectRoute =
  | { kind: 'suite'; suiteName: string }
  | { kind: 'dataset'; suiteName: string }
  | { kind: 'prompt'; path: string }
  | { kind: 'other' };

export function suiteKey(suiteName: string): string {
  return `${SUITES_PREFIX}${suiteName}.json`;
}

/** Every report file of the suite, its runs' and its sweeps' (`reports/<name>/`). */
export function suiteReportsPrefix(suiteName: string): string {
  return `${REPORTS_PREFIX}${suiteName}/`;
}

/** The last upload of the suite that was rejected, with the reason (`reports/<name>/rejected.json`). */
export function rejectionKey(suiteName: string): string {
  return `${suiteReportsPrefix(suiteName)}rejected.json`;
}

/** Where `reports/<name>/{runId}/` report files of the suite's runs go (`{runId}` is filled by prepareRun). */
export function reportPrefixOf(suiteName: string): string {
  return `${suiteReportsPrefix(suiteName)}{runId}/`;
}

/** Where `reports/<name>/sweeps/{sweepId}/` sweep files of the suite go (`{sweepId}` is filled by prepareSweep). */
export function sweepPrefixOf(suiteName: string): string {
  return `${suiteReportsPrefix(suiteName)}sweeps/{sweepId}/`;
}

/**
 * Where the ingest of a sampled dataset read in chunks keeps its sample as it stands after each
 * chunk (the next chunk goes on from it). Deterministic, so a chunk done again writes the same.
 */
export function sampleStateKey(runId: string, chunk: number): string {
  return `${SPILL_PREFIX}${runId}/ingest/sample-${chunk}.json`;
}

/**
 * Where the ingest of a dataset no reader can start in the middle of (gzip, a JSON array, an
 * encoding other than UTF-8) keeps the rows of each chunk it split the file into, for the
 * chunk's own invocation to read (see datasets/split.ts). Deterministic, so a split done again
 * writes the same; they expire with the rest of `spill/`.
 */
export function splitChunkKey(runId: string, chunk: number): string {
  return `${SPILL_PREFIX}${runId}/ingest/rows-${chunk}.jsonl`;
}

/**
 * Where a run aggregated a part at a time keeps what its steps hand each other (each part's
 * tally and item files, the reduced report): `spill/<runId>/aggregate/<path>`. Deterministic, so
 * a step done again writes the same objects; they expire with the spill prefix.
 */
export function aggregationKey(runId: string, path: string): string {
  return `${SPILL_PREFIX}${runId}/aggregate/${path}`;
}

/** The S3 key an oversize item is spilled to. Deterministic, so a re-sent item overwrites itself. */
export function spillKey(runId: string, itemId: string): string {
  return `${SPILL_PREFIX}${runId}/${createHash('sha256').update(itemId).digest('hex')}.json`;
}

/**
 * The S3 key a result too large for a DynamoDB item is written to, by reference from its item:
 * `results/<runId>/<sha256(itemId)>-<digest>.json`, `digest` naming the body. A body is never
 * overwritten (a redelivery that records nothing new cannot change what an item refers to).
 */
export function resultBodyKey(runId: string, itemId: string, digest: string): string {
  return `${RESULTS_PREFIX}${runId}/${createHash('sha256').update(itemId).digest('hex')}-${digest}.json`;
}

/** The folder of the bucket whose datasets suite `name` reads, and whose uploads run it. */
export function ownDatasetPrefix(suiteName: string): string {
  return `${DATASETS_PREFIX}${suiteName}/`;
}

/**
 * Why `path` cannot be read as a key of the bucket as it stands (an HTTP client or a folder
 * could normalise `..` into another key), or undefined when it can.
 */
export function keyPathProblem(path: string): string | undefined {
  if (path === '') return 'is empty';
  if (path.startsWith('/') || /^[A-Za-z]:[\\/]/.test(path)) return 'is absolute';
  const segments = path.split('/');
  if (segments.includes('..')) return 'has a `..` segment';
  if (segments.includes('')) return 'has an empty segment (`//` or a trailing `/`)';
  return undefined;
}

/**
 * The bucket key `dataset.path` names, or why it names none:
 * - a `datasets/…` key is itself;
 * - any other relative path lies inside the suite's folder (`gold.csv` → `datasets/<name>/gold.csv`);
 * - a path that first climbs out of the suite's folder on disk (`../gold.csv`, `../../data/gold.csv`:
 *   leading `..` segments only) is its file name in the suite's folder, so a suite that runs
 *   locally runs on AWS unchanged (`assay cloud` uploads the file there);
 * - `.` segments are dropped; a `..` anywhere else, an absolute path and empty segments name no
 *   key (normalising `datasets/<name>/../x.csv` would leave the suite's folder).
 * Whether the suite may read the key is suite-paths.ts's to say.
 */
export function datasetKeyFor(suite: {
  name: string;
  dataset: { path: string };
}): { key: string } | { problem: string } {
  const path = suite.dataset.path;
  const folder = ownDatasetPrefix(suite.name);
  const segments = path.split('/').filter((s) => s !== '.');
  let up = 0;
  while (segments[up] === '..') up += 1;
  const rest = segments.slice(up);
  const problem = rest.length === 0 ? 'names no file' : keyPathProblem(rest.join('/'));
  if (problem !== undefined) return { problem: `dataset.path ${JSON.stringify(path)} ${problem}` };
  if (up > 0) return { key: folder + rest.at(-1) };
  const relative = rest.join('/');
  return { key: relative.startsWith(DATASETS_PREFIX) ? relative : folder + relative };
}

/** The bucket key `dataset.path` names (see {@link datasetKeyFor}); undefined when it names none. */
export function datasetKeyOf(suite: { name: string; dataset: { path: string } }): string | undefined {
  const named = datasetKeyFor(suite);
  return 'key' in named ? named.key : undefined;
}

/** The key of a dataset file dropped for a suite (`datasets/<name>/<file>`). */
export function datasetUploadKey(suiteName: string, fileName: string): string {
  return `${DATASETS_PREFIX}${suiteName}/${fileName}`;
}

/** Reads a (decoded) key: see the layout above. */
export function routeKey(key: string): ObjectRoute {
  if (key.startsWith(SUITES_PREFIX)) {
    const name = key.slice(SUITES_PREFIX.length);
    const match = /^([^/]+)\.json$/.exec(name);
    return match?.[1] ? { kind: 'suite', suiteName: match[1] } : { kind: 'other' };
  }
  if (key.startsWith(DATASETS_PREFIX)) {
    const match = /^([^/]+)\/.*[^/]$/.exec(key.slice(DATASETS_PREFIX.length));
    return match?.[1] ? { kind: 'dataset', suiteName: match[1] } : { kind: 'other' };
  }
  if (key.startsWith(PROMPT_PREFIX) && key.length > PROMPT_PREFIX.length) {
    return { kind: 'prompt', path: key.slice(PROMPT_PREFIX.length) };
  }
  return { kind: 'other' };
}

/**
 * Decodes an object key as S3 event notifications carry it: URL-encoded, with `+` for a space
 * (`datasets/my+caf%C3%A9.csv` → `datasets/my café.csv`). A literal `+` arrives as `%2B`.
 */
export function decodeEventKey(raw: string): string {
  return decodeURIComponent(raw.replaceAll('+', ' '));
}
