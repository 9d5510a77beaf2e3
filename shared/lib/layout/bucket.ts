import { createHash } from 'node:crypto';
import { posix } from 'node:path';

/**
 * The bucket layout of the AWS shell, in one place: what an uploaded key means, where a run's
 * files go, and which prefixes each part of the pipeline reads or writes. The CDK stack (event
 * notifications, IAM prefixes, lifecycle rules, prompt sync), the moto stand-in, the functions
 * and the local cloud all take their prefixes from here.
 *
 * ```
 * suites/<name>.json            a suite; its upload runs it on its dataset
 * datasets/<name>/<file>        a dataset of suite <name>; its upload runs suites/<name>.json on it
 * prompts/<path>                prompt files (override the ones bundled with the functions);
 *                               a changed one re-runs the suites that read it
 * reports/<name>/<runId>/       report files of a run (a sweep variant's runs: reports/<name>.<variant>/<runId>/)
 * reports/<name>/sweeps/<id>/   sweep.json and sweep.txt of a sweep
 * reports/leaderboard.json      every finished run, kept current by the aggregator (and .txt)
 * spill/<runId>/…               item messages too big for the queue; a sampled ingest's state;
 *                               what the steps of an aggregation in parts hand each other
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
 * The bucket key of a suite's dataset: `dataset.path` itself when it is a `datasets/` key, else
 * the path inside the suite's dataset folder `datasets/<name>/`. A path that leaves that folder
 * (`../gold.csv`, written relative to the suite file on disk) is looked up by its file name
 * there (`datasets/<name>/gold.csv`), so a suite that runs locally runs on AWS unchanged.
 * The `..` check comes before any normalising: `datasets/<name>/../gold.csv` would otherwise
 * become `datasets/gold.csv`, a key no upload event maps to the suite. Undefined only for a
 * path that names no file (`..`).
 */
export function datasetKeyOf(suite: { name: string; dataset: { path: string } }): string | undefined {
  const path = suite.dataset.path.replace(/^\/+/, '');
  const folder = `${DATASETS_PREFIX}${suite.name}/`;
  const inside = !path.split('/').includes('..');
  if (inside) return path.startsWith(DATASETS_PREFIX) ? posix.normalize(path) : posix.join(folder, path);
  const file = posix.basename(path);
  return file === '' || file === '.' || file === '..' ? undefined : folder + file;
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
