import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { basename, dirname, resolve } from 'node:path';
import { columnList, fileColumns } from '../shared/lib/datasets/columns.js';
import {
  GIVEN_EXPLANATION,
  GIVEN_OUTPUT,
  joinPredictions,
  withGivenOutput,
} from '../shared/lib/datasets/join.js';
import { formatFromPath } from '../shared/lib/datasets/read.js';
import { readDatasetFile } from '../shared/lib/datasets/source.js';
import {
  parseToolResults,
  type ToolResultFormat,
  type ToolResultRow,
  type ToolResults,
} from '../shared/lib/datasets/tool-results.js';
import { taskFor } from '../shared/registry/registry.js';
import { type Suite, SuiteError, validateSuite } from '../shared/registry/suite.js';
import { type DatasetSource, expectFile, loadSuiteFile, PACKAGE_ROOT } from './local-run.js';

/** Output columns a predictions file is searched for when the family names none. */
const OUTPUT_COLUMNS = ['pred', 'prediction', 'predicted', 'output'] as const;

/** Id columns a predictions file is joined on when none is named. */
const ID_COLUMNS = ['idx', 'id'] as const;

/** Id columns of a file that holds everything, when none is named (those the families read). */
const ROW_ID_COLUMNS = ['id', 'idx', 'question_id'] as const;

export interface ScoreFlags {
  predictions: string;
  gold?: string;
  task?: string;
  suite?: string;
  predColumn?: string;
  goldColumn?: string;
  idColumn?: string;
  /** The predictions file's id column, named apart from the gold file's. */
  predIdColumn?: string;
}

/** The columns `assay score` reads, as it tells the user before scoring. */
export interface ScoreColumns {
  /** The item id: of the gold file and of the predictions file (joined), or of the one file. */
  id: { gold?: string; predictions?: string };
  /** The gold column of the gold file (the predictions file when it holds everything). */
  gold?: string;
  /** The output column of the predictions file. */
  prediction: string;
}

async function readable(path: string, what: string): Promise<string> {
  const full = resolve(path);
  await expectFile(full, `the ${what} file (.csv or .jsonl)`, path);
  return full;
}

const unique = (names: readonly string[]) => [...new Set(names)];
const quoted = (names: readonly string[]) => names.map((n) => JSON.stringify(n)).join(', ');

/**
 * Which columns score: the gold column (named, else the family's first gold column the gold
 * file has), the id column(s), and the prediction column (named, else the one output column of
 * the family's list the predictions file has). The gold column is never taken as the
 * prediction: a column of the predictions file with the gold column's name, or named `gold`,
 * is left out of the automatic choice, and naming the gold column itself of a single file is
 * refused. No candidate, or more than one, is an error that says to use --pred-column.
 */
export function chooseColumns(options: {
  /** Columns of the gold file; undefined when the predictions file holds the gold too. */
  gold?: { name: string; columns: readonly string[] };
  predictions: { name: string; columns: readonly string[] };
  /** The family's gold columns (tried in order) and output columns (candidates). */
  goldCandidates: readonly string[];
  outputCandidates: readonly string[];
  /** The gold column the suite maps, if any. */
  mappedGold?: string;
  /** The id column the suite maps, if any: the dataset's (the gold file's), tried first in the predictions too. */
  mappedId?: string;
  flags: Pick<ScoreFlags, 'predColumn' | 'goldColumn' | 'idColumn' | 'predIdColumn'>;
  /** Both files are the same file: its gold column cannot be its prediction. */
  sameFile?: boolean;
}): ScoreColumns {
  const { predictions, flags } = options;
  const goldFile = options.gold ?? predictions;
  const has = (file: { columns: readonly string[] }, name: string) => file.columns.includes(name);

  const named = flags.goldColumn ?? options.mappedGold;
  if (named !== undefined && goldFile.columns.length > 0 && !has(goldFile, named))
    throw new Error(
      `the gold column ${JSON.stringify(named)} is not in ${goldFile.name} (its columns: ${columnList(goldFile.columns)})`,
    );
  const gold = named ?? options.goldCandidates.find((name) => has(goldFile, name));

  // The id column: --id-column (both files), else the suite's (the dataset's), else the usual
  // names; --pred-id-column names the predictions file's apart (the suite's is tried first there).
  const usual: readonly string[] = options.gold ? ID_COLUMNS : ROW_ID_COLUMNS;
  const { mappedId } = options;
  const goldIds = flags.idColumn ? [flags.idColumn] : mappedId ? [mappedId] : usual;
  const predictionIds = flags.predIdColumn
    ? [flags.predIdColumn]
    : flags.idColumn
      ? [flags.idColumn]
      : unique([...(mappedId ? [mappedId] : []), ...usual]);
  const idOf = (
    file: { name: string; columns: readonly string[] },
    candidates: readonly string[],
    flag: string,
  ) => {
    const id = candidates.find((name) => has(file, name));
    if (options.gold && id === undefined)
      throw new Error(
        `${file.name} has no id column to join on (${candidates.join(' or ')}; its columns: ${columnList(file.columns)}): name it with ${flag}`,
      );
    return id;
  };
  const id = options.gold
    ? {
        gold: idOf(options.gold, goldIds, '--id-column'),
        predictions: idOf(predictions, predictionIds, '--pred-id-column'),
      }
    : { predictions: idOf(predictions, flags.predIdColumn ? predictionIds : goldIds, '--id-column') };

  const single = !options.gold || options.sameFile === true;
  if (flags.predColumn !== undefined) {
    if (!has(predictions, flags.predColumn))
      throw new Error(
        `the prediction column ${JSON.stringify(flags.predColumn)} is not in ${predictions.name} (its columns: ${columnList(predictions.columns)})`,
      );
    if (single && flags.predColumn === gold)
      throw new Error(
        `--pred-column ${flags.predColumn} is the gold column of ${goldFile.name}: scoring it would compare the gold with itself`,
      );
    return { id, gold, prediction: flags.predColumn };
  }

  const goldLike = unique([gold, named, 'gold'].filter((n): n is string => n !== undefined));
  const present = unique(options.outputCandidates).filter((name) => has(predictions, name));
  const candidates = present.filter((name) => !goldLike.includes(name));
  if (candidates.length === 1) return { id, gold, prediction: candidates[0]! };
  const setAside = present.filter((name) => goldLike.includes(name));
  const why =
    setAside.length > 0
      ? `; ${quoted(setAside)} ${setAside.length === 1 ? 'is' : 'are'} there but never taken for the prediction${gold !== undefined && setAside.includes(gold) ? ` (${JSON.stringify(gold)} is the gold column of ${goldFile.name})` : ''}`
      : '';
  if (candidates.length === 0) {
    const sought = unique(options.outputCandidates).filter((name) => !goldLike.includes(name));
    throw new Error(
      `cannot tell which column of ${predictions.name} holds the predictions: it has none of ${sought.join(', ')}${why}. Name it with --pred-column <column> (its columns: ${columnList(predictions.columns)})`,
    );
  }
  throw new Error(
    `${predictions.name} has several columns that could hold the predictions: ${quoted(candidates)}${why}. Name one with --pred-column <column>`,
  );
}

/** One line saying which columns `assay score` reads. */
export function describeColumns(
  columns: ScoreColumns,
  files: { gold?: string; predictions: string },
): string {
  const predictions = basename(files.predictions);
  const gold = files.gold === undefined ? predictions : basename(files.gold);
  const goldPart =
    columns.gold === undefined
      ? `no gold column in ${gold}`
      : `gold column ${JSON.stringify(columns.gold)} of ${gold}`;
  const id = files.gold
    ? columns.id.gold === columns.id.predictions
      ? `joined on ${JSON.stringify(columns.id.gold)}`
      : `joined on ${JSON.stringify(columns.id.gold)} (${gold}) = ${JSON.stringify(columns.id.predictions)} (${predictions})`
    : columns.id.predictions === undefined
      ? 'ids from the row content'
      : `ids from ${JSON.stringify(columns.id.predictions)}`;
  return `scoring: prediction column ${JSON.stringify(columns.prediction)} of ${predictions} against ${goldPart}, ${id}\n`;
}

/**
 * What `assay score` runs: the suite (given, or the family's defaults for scoring) with its
 * dataset mapped to the reserved output columns, and the rows: the predictions file joined to
 * the gold file on the item id, or the predictions file alone. Both files are checked before
 * anything is read, so a missing file is one clear error; so is a column that cannot be chosen.
 */
export async function scoringRun(flags: ScoreFlags): Promise<{
  suite: Suite;
  suiteDir: string;
  dataset: DatasetSource;
  columns: ScoreColumns;
  /** Which columns are read, for the screen. */
  notice: string;
}> {
  const predictions = await readable(flags.predictions, 'predictions');
  const gold = flags.gold === undefined ? undefined : await readable(flags.gold, 'gold');
  const given = flags.suite === undefined ? undefined : await loadSuiteFile(flags.suite);
  const task = flags.task ?? given?.task ?? 'gec';
  if (given && given.task !== task)
    throw new SuiteError(
      `${flags.suite} is a ${given.task} suite, not ${task}: drop --task or give a ${task} suite`,
    );
  const family = taskFor({ task });
  if (!given && !family.suite.scoreDefaults) {
    throw new SuiteError(
      `the ${task} task has no defaults to score with: give a ${task} suite with --suite (its options say how to score)`,
    );
  }
  const base: Record<string, unknown> = given ?? {
    version: 1,
    name: `score-${task}`,
    task,
    ...family.suite.scoreDefaults,
  };
  const baseDataset = (base.dataset ?? {}) as { columns?: Record<string, string> };
  const columnsOf = async (path: string) => ({
    name: basename(path),
    columns: await fileColumns(path, formatFromPath(path)),
  });
  const columns = chooseColumns({
    gold: gold === undefined ? undefined : await columnsOf(gold),
    predictions: await columnsOf(predictions),
    goldCandidates: family.suite.goldColumns ?? ['gold'],
    outputCandidates: family.suite.outputColumns ?? OUTPUT_COLUMNS,
    mappedGold: baseDataset.columns?.gold,
    mappedId: baseDataset.columns?.id,
    flags,
    sameFile: gold !== undefined && gold === predictions,
  });
  const datasetPath = gold ?? predictions;
  const suite = validateSuite(
    {
      ...base,
      dataset: {
        ...baseDataset,
        path: datasetPath,
        format: undefined,
        columns: {
          ...baseDataset.columns,
          output: GIVEN_OUTPUT,
          explanation: GIVEN_EXPLANATION,
          ...(flags.goldColumn ? { gold: flags.goldColumn } : {}),
          // A file that holds everything: its items take their ids from the column said on screen.
          ...(!gold && columns.id.predictions ? { id: columns.id.predictions } : {}),
        },
      },
    },
    flags.suite ?? `assay score --task ${task}`,
  );
  // Both files are read in the suite's encoding and held to its field limit (a given output too).
  const { encoding, maxFieldChars } = suite.dataset;
  const open = (path: string) => readDatasetFile(path, { encoding, maxFieldChars });
  const output = columns.prediction;
  const ids = unique([columns.id.gold, columns.id.predictions].filter((n): n is string => n !== undefined));
  const hash = createHash('sha256');
  for (const path of [gold, predictions]) if (path) hash.update(await readFile(path));
  hash.update(`\0${output}`);
  return {
    suite,
    suiteDir: flags.suite ? dirname(resolve(flags.suite)) : PACKAGE_ROOT,
    columns,
    notice: describeColumns(columns, { gold, predictions }),
    dataset: {
      key: gold ? `${gold} × ${basename(predictions)}` : predictions,
      predictions: `predictions from ${basename(predictions)} (column ${output})`,
      version: hash.digest('hex'),
      columns: () => fileColumns(datasetPath, formatFromPath(datasetPath)),
      rows: () =>
        gold
          ? joinPredictions(open(gold), open(predictions), { output, ...(ids.length > 0 ? { id: ids } : {}) })
          : withGivenOutput(open(predictions), { output }),
    },
  };
}

/**
 * The configurations of a predictions file (its `column`, e.g. the physics QA study's
 * `config`): each value's rows as a dataset of their own, in order of first appearance.
 * Empty when the column is absent; one entry when every row has the same value.
 */
export async function configurations(
  dataset: DatasetSource,
  column: string,
): Promise<{ name: string; value: string; dataset: DatasetSource }[]> {
  const values: string[] = [];
  for await (const row of dataset.rows()) {
    if (row.record === undefined) continue;
    const value = row.record[column];
    if (value === undefined) return [];
    if (!values.includes(value)) values.push(value);
  }
  const used = new Set<string>();
  return values.map((value, index) => {
    // A variant name: letters, digits, dot, dash, underscore; made unique if cleaning collides.
    let name = value.replace(/[^A-Za-z0-9._-]+/g, '-').replace(/^[^A-Za-z0-9]+/, '') || 'config';
    while (used.has(name)) name = `${name}-`;
    used.add(name);
    return {
      name,
      value,
      dataset: {
        key: `${dataset.key} [${column}=${value}]`,
        ...(dataset.predictions ? { predictions: `${dataset.predictions}, ${column} ${value}` } : {}),
        version: `${dataset.version}:${column}=${value}`,
        rows: async function* () {
          // A row that could not be read belongs to no configuration: the first one reports it.
          for await (const row of dataset.rows()) {
            if (row.record === undefined ? index === 0 : row.record[column] === value) yield row;
          }
        },
      },
    };
  });
}

/** What `assay score --results` reads: a results file of another tool. */
export interface ResultsFlags {
  results: string;
  format?: ToolResultFormat;
}

/** The reserved columns of the rows made from a results file. */
export const RESULTS_CONFIG_COLUMN = 'config';

/**
 * What `assay score --results` runs: the verdicts task over the rows of another tool's results
 * file. Each test of each configuration is one item; the rows of a test a configuration ran
 * several times (promptfoo's `repeat`) are its repeats, in file order, so the suite asks for as
 * many repeats as the most repeated test has. Each item keeps the file's rows it came from
 * (`source`) and the errors of its rows (`errors`). The configurations are told apart by the `config` column, as `--by` does.
 */
export async function resultsRun(flags: ResultsFlags): Promise<{
  suite: Suite;
  suiteDir: string;
  dataset: DatasetSource;
  results: ToolResults;
  repeats: number;
  notice: string;
}> {
  const path = resolve(flags.results);
  await expectFile(
    path,
    'the results file (promptfoo results.json, OpenAI Evals output items)',
    flags.results,
  );
  const content = await readFile(path, 'utf8');
  const results = parseToolResults(flags.results, content, flags.format);
  const groups = new Map<string, ToolResultRow[]>();
  for (const row of results.rows) {
    const key = JSON.stringify([row.config, row.test]);
    const group = groups.get(key);
    if (group) group.push(row);
    else groups.set(key, [row]);
  }
  const repeats = Math.max(1, ...[...groups.values()].map((g) => g.length));
  // The first configuration is the baseline: the items go in the configurations' order.
  const ordered = [...groups.values()].sort(
    (a, b) => results.configs.indexOf(a[0]!.config) - results.configs.indexOf(b[0]!.config),
  );
  const records = ordered.map((group) => ({
    [RESULTS_CONFIG_COLUMN]: group[0]!.config,
    id: group[0]!.test,
    input: group[0]!.input,
    verdicts: JSON.stringify(
      group.map((r) => ({
        verdict: r.verdict,
        ...(r.reason !== undefined ? { reason: r.reason } : {}),
        ...(r.output !== undefined ? { output: r.output } : {}),
      })),
    ),
    source: group.map((r) => r.where).join(', '),
    // An errored repeat has no value: its error stays with the item (labeled.csv, results.jsonl).
    errors: group
      .filter((r) => r.verdict === 'error')
      .map((r) => `${r.where}: ${r.reason}`)
      .join('; '),
  }));
  const suite = validateSuite(
    {
      version: 1,
      name: `score-${results.format}`,
      task: 'verdicts',
      backends: [],
      dataset: { path, columns: { id: 'id', output: 'verdicts' } },
      ...(repeats > 1 ? { run: { repeats } } : {}),
    },
    `assay score --results ${flags.results}`,
  );
  const tests = new Set(results.rows.map((r) => r.test)).size;
  const errors = results.rows.filter((r) => r.verdict === 'error').length;
  const version = createHash('sha256').update(content).update(`\0${results.format}`).digest('hex');
  return {
    suite,
    suiteDir: PACKAGE_ROOT,
    results,
    repeats,
    notice: `scoring: ${results.rows.length} ${results.format} results of ${basename(path)}: ${results.configs.length} configuration${results.configs.length === 1 ? '' : 's'}, ${tests} test${tests === 1 ? '' : 's'}${repeats > 1 ? `, up to ${repeats} repeats a test` : ''}, ${errors} error${errors === 1 ? '' : 's'}\n`,
    dataset: {
      key: path,
      predictions: `verdicts from ${basename(path)} (${results.format})`,
      version,
      rows: async function* () {
        for (const [i, record] of records.entries()) yield { row: i + 1, line: i + 2, record };
      },
    },
  };
}
