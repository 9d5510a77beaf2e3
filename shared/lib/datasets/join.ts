import type { RawRow } from './read.js';

/**
 * Scoring outputs made elsewhere: a predictions file joined to a gold file on the item id, or
 * a predictions file that holds everything. The output (and its explanation) land in reserved
 * columns that the suite maps (`dataset.columns.output`), so the run reads them like any row.
 * Nothing is dropped: a gold row without a prediction keeps no output (the item fails as
 * `no_output`), and a prediction without a gold row, a duplicate, or a row without an id or
 * output is an invalid row of its own.
 */

/** The reserved columns the joined rows carry. */
export const GIVEN_OUTPUT = 'assay:output';
export const GIVEN_EXPLANATION = 'assay:explanation';

/** Columns tried, in order, for an output's explanation when none is named. */
export const EXPLANATION_COLUMNS = ['reason', 'judge_reason', 'explanation'] as const;

export interface GivenColumns {
  /** Id columns tried in order (default `idx`, `id`). */
  id?: readonly string[];
  /** The output column, or the candidates tried in order. */
  output: string | readonly string[];
}

function pick(record: Record<string, string>, names: readonly string[]): string | undefined {
  const name = names.find((n) => record[n] !== undefined);
  return name === undefined ? undefined : record[name];
}

const asList = (names: string | readonly string[]) => (typeof names === 'string' ? [names] : names);

/** A predictions file that holds inputs, gold and output: each row gets the reserved output columns. */
export async function* withGivenOutput(
  rows: AsyncIterable<RawRow>,
  columns: GivenColumns,
): AsyncGenerator<RawRow> {
  const candidates = asList(columns.output);
  for await (const raw of rows) {
    if (raw.error !== undefined) {
      yield raw;
      continue;
    }
    const output = pick(raw.record, candidates);
    const explanation = pick(raw.record, EXPLANATION_COLUMNS);
    yield {
      ...raw,
      record: {
        ...raw.record,
        ...(output !== undefined ? { [GIVEN_OUTPUT]: output } : {}),
        ...(explanation !== undefined ? { [GIVEN_EXPLANATION]: explanation } : {}),
      },
    };
  }
}

/**
 * Gold rows with the prediction of the same id (read whole first: predictions files are
 * small next to memory), then the predictions no gold row claimed, as invalid rows.
 */
export async function* joinPredictions(
  gold: AsyncIterable<RawRow>,
  predictions: AsyncIterable<RawRow>,
  columns: GivenColumns,
): AsyncGenerator<RawRow> {
  const ids = columns.id ?? ['idx', 'id'];
  const candidates = asList(columns.output);
  const byId = new Map<string, { output: string; explanation?: string; row: number }>();
  const problems: RawRow[] = [];
  const problem = (row: number, line: number, error: string) =>
    problems.push({
      row,
      line: 0,
      error: `predictions line ${line}: ${error}`,
      id: `predictions-row-${row}`,
    });

  for await (const raw of predictions) {
    if (raw.error !== undefined) {
      problem(raw.row, raw.line, raw.error);
      continue;
    }
    const id = pick(raw.record, ids)?.trim();
    const output = pick(raw.record, candidates);
    if (!id || output === undefined) {
      problem(
        raw.row,
        raw.line,
        `needs an id column (${ids.join('|')}) and an output column (${candidates.join('|')})`,
      );
      continue;
    }
    if (byId.has(id)) {
      problem(raw.row, raw.line, `duplicate id ${JSON.stringify(id)}`);
      continue;
    }
    const explanation = pick(raw.record, EXPLANATION_COLUMNS);
    byId.set(id, { output, row: raw.row, ...(explanation !== undefined ? { explanation } : {}) });
  }

  const claimed = new Set<string>();
  for await (const raw of gold) {
    if (raw.error !== undefined) {
      yield raw;
      continue;
    }
    const id = pick(raw.record, ids)?.trim();
    const prediction = id === undefined ? undefined : byId.get(id);
    if (id !== undefined && prediction) claimed.add(id);
    yield {
      ...raw,
      record: {
        ...raw.record,
        ...(prediction ? { [GIVEN_OUTPUT]: prediction.output } : {}),
        ...(prediction?.explanation !== undefined ? { [GIVEN_EXPLANATION]: prediction.explanation } : {}),
      },
    };
  }
  yield* problems;
  for (const [id, prediction] of byId) {
    if (claimed.has(id)) continue;
    yield {
      row: prediction.row,
      line: 0,
      error: `predictions row ${prediction.row}: id ${JSON.stringify(id)} has no gold row`,
      id: `predictions-row-${prediction.row}`,
    };
  }
}
