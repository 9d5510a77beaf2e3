import { ConfigError, InputError } from '../../model/errors.js';
import { DATASETS_PREFIX, datasetKeyFor, keyPathProblem, ownDatasetPrefix } from './bucket.js';

/**
 * What a suite may read in the bucket. A suite reads its dataset from its own folder,
 * `datasets/<suite name>/…` (the folder whose uploads run it), or from a folder the deployment
 * shares with every suite (`ASSAY_DATASET_PREFIXES`, e.g. `datasets/shared/`); never another
 * suite's folder or any other area of the bucket. Its prompts are `prompts/<path>` keys. A path
 * that could name a key elsewhere once an HTTP client or a folder normalises it (`..`), an
 * absolute path, or one with empty segments (`a//b`) is refused as it stands, before any read.
 */

/** A suite names a file it may not read, or a path that names no file: the suite must change. */
export class SuitePathError extends InputError {
  override readonly name = 'SuitePathError';
}

/** Why a suite's prompt path cannot be read on AWS (`prompts/<path>`), or undefined when it can. */
export function promptPathProblem(path: string): string | undefined {
  const problem = keyPathProblem(path);
  return problem === undefined ? undefined : `prompt path ${JSON.stringify(path)} ${problem}`;
}

/** Refuses the first prompt path that cannot be read on AWS. */
export function checkPromptPaths(paths: Iterable<string>): void {
  for (const path of paths) {
    const problem = promptPathProblem(path);
    if (problem !== undefined)
      throw new SuitePathError(
        `${problem}: a prompt is read from prompts/<path> in the bucket, a path inside it`,
      );
  }
}

/**
 * The bucket key of a suite's dataset, which it may read: under its own folder
 * `datasets/<name>/` or a prefix the deployment shares (`allowed`). Anything else is a
 * {@link SuitePathError} that says what the suite may read.
 */
export function suiteDatasetKey(
  suite: { name: string; dataset: { path: string } },
  allowed: readonly string[] = [],
): string {
  const named = datasetKeyFor(suite);
  if ('problem' in named) throw new SuitePathError(`${named.problem}: ${readable(suite.name, allowed)}`);
  checkDatasetKey(suite.name, named.key, allowed);
  return named.key;
}

/** Refuses a dataset key suite `suiteName` may not read (see {@link suiteDatasetKey}). */
export function checkDatasetKey(suiteName: string, key: string, allowed: readonly string[] = []): void {
  const problem = keyPathProblem(key);
  if (problem !== undefined)
    throw new SuitePathError(
      `dataset key ${JSON.stringify(key)} ${problem}: ${readable(suiteName, allowed)}`,
    );
  if ([ownDatasetPrefix(suiteName), ...allowed].some((prefix) => key.startsWith(prefix))) return;
  throw new SuitePathError(`dataset ${key} is outside the suite's datasets: ${readable(suiteName, allowed)}`);
}

function readable(suiteName: string, allowed: readonly string[]): string {
  const shared = allowed.length === 0 ? '' : ` or under ${allowed.join(', ')} (ASSAY_DATASET_PREFIXES)`;
  return `suite ${suiteName} reads a dataset under ${ownDatasetPrefix(suiteName)}${shared}`;
}

/**
 * The deployment's shared dataset folders: `ASSAY_DATASET_PREFIXES`, comma-separated
 * (`datasets/shared/,datasets/public/`). Each is a folder under `datasets/` (the trailing `/`
 * added when missing); anything else is a {@link ConfigError}, so a deploy cannot open other
 * areas of the bucket to every suite.
 */
export function parseDatasetPrefixes(text: string | undefined): string[] {
  const out: string[] = [];
  for (const raw of (text ?? '').split(',')) {
    const entry = raw.trim();
    if (entry === '') continue;
    const prefix = entry.endsWith('/') ? entry : `${entry}/`;
    const problem = keyPathProblem(prefix.slice(0, -1));
    if (problem !== undefined || !prefix.startsWith(DATASETS_PREFIX) || prefix === DATASETS_PREFIX) {
      throw new ConfigError(
        `ASSAY_DATASET_PREFIXES: ${JSON.stringify(entry)} is not a folder under ${DATASETS_PREFIX} (e.g. ${DATASETS_PREFIX}shared/)${problem === undefined ? '' : `: it ${problem}`}`,
      );
    }
    out.push(prefix);
  }
  return out;
}
