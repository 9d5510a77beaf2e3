import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { basename, dirname, resolve } from 'node:path';
import { type Suite, SuiteError, validateSuite } from '../shared/core/suite.js';
import {
  GIVEN_EXPLANATION,
  GIVEN_OUTPUT,
  joinPredictions,
  withGivenOutput,
} from '../shared/datasets/join.js';
import { formatFromPath, readRows } from '../shared/datasets/read.js';
import { taskFor } from '../shared/tasks/registry.js';
import { type DatasetSource, expectFile, loadSuiteFile, PACKAGE_ROOT } from './local-run.js';

/** Output columns a predictions file is searched for when the family names none. */
const OUTPUT_COLUMNS = ['pred', 'prediction', 'predicted', 'output'] as const;

export interface ScoreFlags {
  predictions: string;
  gold?: string;
  task?: string;
  suite?: string;
  predColumn?: string;
  goldColumn?: string;
}

async function readable(path: string, what: string): Promise<string> {
  const full = resolve(path);
  await expectFile(full, `the ${what} file (.csv or .jsonl)`, path);
  return full;
}

/**
 * What `assay score` runs: the suite (given, or the family's defaults for scoring) with its
 * dataset mapped to the reserved output columns, and the rows: the predictions file joined to
 * the gold file on the item id, or the predictions file alone. Both files are checked before
 * anything is read, so a missing file is one clear error.
 */
export async function scoringRun(
  flags: ScoreFlags,
): Promise<{ suite: Suite; suiteDir: string; dataset: DatasetSource }> {
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
  const datasetPath = gold ?? predictions;
  const baseDataset = (base.dataset ?? {}) as { columns?: Record<string, string> };
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
        },
      },
    },
    flags.suite ?? `assay score --task ${task}`,
  );
  // Both files are read in the suite's encoding and held to its field limit (a given output too).
  const { encoding, maxFieldChars } = suite.dataset;
  const open = (path: string) =>
    readRows(createReadStream(path), formatFromPath(path), { encoding, maxFieldChars });
  const output = flags.predColumn ?? family.suite.outputColumns ?? OUTPUT_COLUMNS;
  const hash = createHash('sha256');
  for (const path of [gold, predictions]) if (path) hash.update(await readFile(path));
  return {
    suite,
    suiteDir: flags.suite ? dirname(resolve(flags.suite)) : PACKAGE_ROOT,
    dataset: {
      key: gold ? `${gold} × ${basename(predictions)}` : predictions,
      version: hash.digest('hex'),
      rows: () =>
        gold
          ? joinPredictions(open(gold), open(predictions), { output })
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
