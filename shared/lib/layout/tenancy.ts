import { ConfigError } from '../../model/errors.js';
import type { BlobPiece, BlobRead, BlobStore } from '../../ports/ports.js';
import { DATASETS_PREFIX, PROMPT_PREFIX, SUITES_PREFIX } from './bucket.js';

/**
 * Teams in one bucket. A deployment may declare teams (CDK context `teams`, ingest's
 * `ASSAY_TEAMS`); each team owns the suites named for it, `<team>` or `<team>-…`, with their
 * keys:
 *
 * ```
 * suites/<team>.json, suites/<team>-….json       the team's suites
 * datasets/<team>/…, datasets/<team>-…/…          their datasets
 * prompts/<team>/<path>                           the team's prompt overrides: read by its suites only
 * ```
 *
 * The bucket policy lets only the team's writers put those keys (infra/constructs/storage.ts);
 * ingest keeps each team's prompts to its own suites: a team's suite reads prompt `<path>` from
 * `prompts/<team>/<path>`, else the copy bundled with the functions, never a key outside its
 * team's folder, and an upload there re-runs only the team's suites. A suite named for no team
 * reads `prompts/<path>` over the bundled copy and is re-run by an upload there, as in a
 * deployment that declares no teams, where every suite is such a suite.
 */

/** A team's name: lowercase letters and digits, so the `<team>-` prefix of its suites reads one way. */
const TEAM_NAME = /^[a-z0-9]+$/;

/**
 * The folders of the prompts bundled with the functions (one per task family): no team is
 * named for one, or its prompt folder would be the shipped prompts' keys.
 */
export const SHIPPED_PROMPT_FOLDERS = ['cleanup', 'gec', 'judge', 'qa', 'summarization'] as const;

/** Why `name` cannot name a team, or undefined when it can. */
export function teamNameProblem(name: string): string | undefined {
  if (!TEAM_NAME.test(name)) return 'is not lowercase letters and digits (no dash, dot or underscore)';
  if ((SHIPPED_PROMPT_FOLDERS as readonly string[]).includes(name))
    return `is a folder of the shipped prompts (${SHIPPED_PROMPT_FOLDERS.join(', ')})`;
  return undefined;
}

/**
 * The deployment's teams: `ASSAY_TEAMS`, comma-separated (`alpha,beta`), sorted, each once;
 * none when unset. A name that cannot be a team is a {@link ConfigError} naming it.
 */
export function parseTeams(text: string | undefined): string[] {
  const teams = new Set<string>();
  for (const raw of (text ?? '').split(',')) {
    const name = raw.trim();
    if (name === '') continue;
    const problem = teamNameProblem(name);
    if (problem !== undefined)
      throw new ConfigError(`ASSAY_TEAMS: team ${JSON.stringify(name)} ${problem}: rename the team`);
    teams.add(name);
  }
  return [...teams].sort();
}

/** The team that owns suite `suiteName` (named `<team>` or `<team>-…`), or undefined for a suite of no team. */
export function teamOf(suiteName: string, teams: readonly string[]): string | undefined {
  return teams.find((team) => suiteName === team || suiteName.startsWith(`${team}-`));
}

/** Where the bucket's overrides of suite `suiteName`'s prompts are: `prompts/<team>/`, or `prompts/` for a suite of no team. */
export function promptScopePrefix(suiteName: string, teams: readonly string[]): string {
  const team = teamOf(suiteName, teams);
  return team === undefined ? PROMPT_PREFIX : `${PROMPT_PREFIX}${team}/`;
}

/** The bucket key suite `suiteName` reads prompt `path` from, before the bundled copy. */
export function scopedPromptKey(suiteName: string, path: string, teams: readonly string[]): string {
  return `${promptScopePrefix(suiteName, teams)}${path}`;
}

/**
 * Why suite `suiteName` may not name prompt `path`, or undefined when it may: a suite of no
 * team naming a path in a team's folder (`alpha/x.md`) would read that team's prompt and be
 * re-run by the team's uploads.
 */
export function promptScopeProblem(
  suiteName: string,
  path: string,
  teams: readonly string[],
): string | undefined {
  if (teamOf(suiteName, teams) !== undefined) return undefined;
  const folder = path.split('/')[0];
  if (path.includes('/') && folder !== undefined && teams.includes(folder)) {
    return `prompt path ${JSON.stringify(path)} is in team ${folder}'s folder (prompts/${folder}/), which only that team's suites (${folder} or ${folder}-…) read: put the prompt elsewhere under prompts/, or name the suite for the team`;
  }
  return undefined;
}

/**
 * What an upload of `prompts/<key path>` changes: prompt `path` of the suites of `team`
 * (`prompts/alpha/judge/x.md`: team alpha's `judge/x.md`), or, outside every team's folder,
 * prompt `path` of the suites of no team (`team` undefined).
 */
export interface PromptUpload {
  team?: string;
  path: string;
}

/** Reads the path of an uploaded prompt key (after `prompts/`): see {@link PromptUpload}. */
export function promptUploadOf(keyPath: string, teams: readonly string[]): PromptUpload {
  const slash = keyPath.indexOf('/');
  const folder = slash > 0 ? keyPath.slice(0, slash) : undefined;
  if (folder !== undefined && teams.includes(folder)) return { team: folder, path: keyPath.slice(slash + 1) };
  return { path: keyPath };
}

/** Whether suite `suiteName` reads what `upload` changed: only a suite of the upload's team (or of no team, for a key of no team's folder). */
export function readsUpload(suiteName: string, upload: PromptUpload, teams: readonly string[]): boolean {
  return teamOf(suiteName, teams) === upload.team;
}

/**
 * The keys a team owns, as bucket-policy resources (relative to the bucket, `*` a wildcard):
 * its suites, their datasets and its prompt folder. Only its writers may put or delete them.
 */
export function teamKeyPatterns(team: string): string[] {
  return [
    `${SUITES_PREFIX}${team}.json`,
    `${SUITES_PREFIX}${team}-*`,
    `${DATASETS_PREFIX}${team}/*`,
    `${DATASETS_PREFIX}${team}-*`,
    `${PROMPT_PREFIX}${team}/*`,
  ];
}

/**
 * The prompts one suite reads: `prompts/<path>` from its scope in the bucket
 * ({@link promptScopePrefix}), else from the bundled prompts. Read only: ingest snapshots
 * prompts through it and writes nothing.
 */
export class ScopedPromptStore implements BlobStore {
  constructor(
    private readonly bucket: BlobStore,
    private readonly scopePrefix: string,
    private readonly bundled: BlobStore,
  ) {}

  private inScope(key: string): string | undefined {
    return key.startsWith(PROMPT_PREFIX)
      ? `${this.scopePrefix}${key.slice(PROMPT_PREFIX.length)}`
      : undefined;
  }

  async get(key: string): Promise<Uint8Array | undefined> {
    const scoped = this.inScope(key);
    return (scoped === undefined ? undefined : await this.bucket.get(scoped)) ?? this.bundled.get(key);
  }

  async read(
    key: string,
    options?: { start?: number; end?: number; version?: string },
  ): Promise<BlobRead | undefined> {
    const scoped = this.inScope(key);
    return (
      (scoped === undefined ? undefined : await this.bucket.read(scoped, options)) ??
      this.bundled.read(key, options)
    );
  }

  async list(prefix: string): Promise<string[]> {
    const scoped = this.inScope(prefix);
    const own =
      scoped === undefined
        ? []
        : (await this.bucket.list(scoped)).map(
            (key) => `${PROMPT_PREFIX}${key.slice(this.scopePrefix.length)}`,
          );
    return [...new Set([...own, ...(await this.bundled.list(prefix))])].sort();
  }

  put(key: string, _body: Uint8Array | string): Promise<void> {
    return Promise.reject(new Error(`the prompts of a suite are read only: cannot write ${key}`));
  }

  putStream(key: string, _body: AsyncIterable<Uint8Array | string>): Promise<void> {
    return this.put(key, '');
  }

  compose(key: string, _pieces: readonly BlobPiece[]): Promise<void> {
    return this.put(key, '');
  }
}
