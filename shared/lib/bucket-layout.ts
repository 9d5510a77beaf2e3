import { posix } from 'node:path';
import type { BaseSuite as Suite } from '../model/suite-base.js';
import { PROMPT_PREFIX } from './prompts/prompts.js';

/**
 * The bucket layout of the AWS shell, in one place: what an uploaded key means and where a
 * run's files go. Shared by the ingest function and the local cloud, which uploads to it.
 *
 * ```
 * suites/<name>.json            a suite; its upload runs it on its dataset
 * datasets/<name>/<file>        a dataset of suite <name>; its upload runs suites/<name>.json on it
 * prompts/<path>                prompt files (override the ones bundled with the functions);
 *                               a changed one re-runs the suites that read it
 * reports/<name>/<runId>/       report files of a run (a sweep variant's runs: reports/<name>.<variant>/<runId>/)
 * reports/<name>/sweeps/<id>/   sweep.json and sweep.txt of a sweep
 * reports/leaderboard.json      every finished run, kept current by the aggregator (and .txt)
 * spill/<runId>/…               item messages too big for the queue
 * ```
 */

export const SUITES_PREFIX = 'suites/';
export const DATASETS_PREFIX = 'datasets/';
export const REPORTS_PREFIX = 'reports/';

/** What an object key in the bucket stands for. */
export type ObjectRoute =
  | { kind: 'suite'; suiteName: string }
  | { kind: 'dataset'; suiteName: string }
  | { kind: 'prompt'; path: string }
  | { kind: 'other' };

export function suiteKey(suiteName: string): string {
  return `${SUITES_PREFIX}${suiteName}.json`;
}

/** Where `reports/<name>/{runId}/` report files of the suite's runs go (`{runId}` is filled by prepareRun). */
export function reportPrefixOf(suiteName: string): string {
  return `${REPORTS_PREFIX}${suiteName}/{runId}/`;
}

/** Where `reports/<name>/sweeps/{sweepId}/` sweep files of the suite go (`{sweepId}` is filled by prepareSweep). */
export function sweepPrefixOf(suiteName: string): string {
  return `${REPORTS_PREFIX}${suiteName}/sweeps/{sweepId}/`;
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
export function datasetKeyOf(suite: Pick<Suite, 'name' | 'dataset'>): string | undefined {
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
    const match = /^suites\/([^/]+)\.json$/.exec(key);
    return match?.[1] ? { kind: 'suite', suiteName: match[1] } : { kind: 'other' };
  }
  if (key.startsWith(DATASETS_PREFIX)) {
    const match = /^datasets\/([^/]+)\/.*[^/]$/.exec(key);
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
