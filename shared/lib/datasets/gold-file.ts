/**
 * Gold from a file of its own (`dataset.goldFile`): a CSV of `id,label` — what a person exported
 * from the labelling page — merged into the dataset's rows as their gold, by item id. An optional
 * column `p` gives the probability with which the item was chosen for labelling; it reaches the
 * item as the column {@link GOLD_P_COLUMN}. With a `p` on some label, the prediction-powered
 * estimates are the active-inference ones (metrics/ppi.ts): each such label weighs 1/p, so that
 * items chosen where the judge was least sure do not bias them, and a label without one (the
 * dataset's own gold, there before `assay label` drew among the items without) counts as certain.
 * One file is one draw: its `p` is the chance of being chosen given the labels that existed.
 */
import { unguardFormulas } from '../../model/csv-guard.js';
import { InputError } from '../../model/errors.js';
import type { RawRow } from './read.js';

/** The dataset column an item's sampling probability for labelling is read from. */
export const GOLD_P_COLUMN = 'gold_p';

/** One label of a gold file, and the probability its item was chosen with, when given. */
export interface GoldLabel {
  label: string;
  p?: number;
}

/** How many ids an error names before it says "and N more". */
const NAMED = 10;

/**
 * The labels of a gold file's rows, by item id: each row needs an id and a label (a blank label
 * is an item left unlabelled, skipped); `p` when present is in (0, 1]. A duplicate id, a missing
 * column or a bad `p` is an error naming the file and the row.
 */
export async function readGoldFile(
  rows: AsyncIterable<RawRow>,
  source: string,
): Promise<Map<string, GoldLabel>> {
  const labels = new Map<string, GoldLabel>();
  for await (const raw of rows) {
    const where = `${source} row ${raw.row}`;
    if (raw.error !== undefined) throw new InputError(`${where}: ${raw.error}`);
    // The labelling page guards its cells against spreadsheet formulas: the guard comes off here.
    const { id: guardedId, label: guardedLabel, p } = raw.record;
    const id = guardedId === undefined ? undefined : unguardFormulas(guardedId);
    const label = guardedLabel === undefined ? undefined : unguardFormulas(guardedLabel);
    if (id === undefined || label === undefined)
      throw new InputError(`${where}: a gold file has the columns id and label (and optionally p)`);
    const key = id.trim();
    if (key === '') throw new InputError(`${where}: no id`);
    if (labels.has(key)) throw new InputError(`${where}: id ${JSON.stringify(key)} again`);
    if (label.trim() === '') continue;
    const entry: GoldLabel = { label };
    if (p !== undefined && p.trim() !== '') {
      const value = Number(p);
      if (!(value > 0 && value <= 1))
        throw new InputError(
          `${where}: p ${JSON.stringify(p)} is not a probability in (0, 1] (the chance the item was chosen for labelling)`,
        );
      entry.p = value;
    }
    labels.set(key, entry);
  }
  return labels;
}

/** Where a gold file's labels go in a dataset record. */
export interface GoldColumns {
  /** The column holding each row's item id. */
  id: string;
  /**
   * The column the family reads the gold from; several: the family's defaults, tried in order
   * (the first the row has, else the first).
   */
  gold: string | readonly string[];
}

function goldColumnOf(record: Record<string, string>, gold: GoldColumns['gold']): string {
  if (typeof gold === 'string') return gold;
  return gold.find((name) => Object.hasOwn(record, name)) ?? gold[0] ?? 'gold';
}

/**
 * The dataset's rows with the gold file's labels as their gold (over any gold a row has), and
 * each label's `p` as the row's {@link GOLD_P_COLUMN}. A row whose id the file does not list
 * keeps its own gold, or has a blank one when the dataset has no column the suite names for it.
 */
export async function* withGoldLabels(
  rows: AsyncIterable<RawRow>,
  labels: ReadonlyMap<string, GoldLabel>,
  columns: GoldColumns,
): AsyncGenerator<RawRow> {
  for await (const raw of rows) {
    if (raw.error !== undefined) {
      yield raw;
      continue;
    }
    const id = raw.record[columns.id]?.trim();
    const gold = id === undefined ? undefined : labels.get(id);
    if (!gold) {
      // A dataset with its gold in the file alone need not have the column: the row is unlabelled.
      const named = typeof columns.gold === 'string' ? columns.gold : undefined;
      yield named !== undefined && !Object.hasOwn(raw.record, named)
        ? { ...raw, record: { ...raw.record, [named]: '' } }
        : raw;
      continue;
    }
    const record = { ...raw.record, [goldColumnOf(raw.record, columns.gold)]: gold.label };
    if (gold.p !== undefined) record[GOLD_P_COLUMN] = String(gold.p);
    yield { ...raw, record };
  }
}

/**
 * One pass over the dataset for the ids of the gold file it does not have: an error naming them
 * (a gold file for another dataset, or ids edited by hand), and an error when the dataset has no
 * id column to merge by.
 */
export async function checkGoldIds(
  rows: AsyncIterable<RawRow>,
  labels: ReadonlyMap<string, GoldLabel>,
  columns: GoldColumns,
  source: string,
): Promise<void> {
  const missing = new Set(labels.keys());
  let withId = 0;
  for await (const raw of rows) {
    if (raw.error !== undefined) continue;
    const id = raw.record[columns.id]?.trim();
    if (id === undefined) continue;
    withId += 1;
    missing.delete(id);
  }
  if (withId === 0 && labels.size > 0)
    throw new InputError(
      `${source}: the dataset has no id column ${JSON.stringify(columns.id)} to merge the gold file's labels by`,
    );
  if (missing.size === 0) return;
  const ids = [...missing];
  const named = ids.slice(0, NAMED).map((id) => JSON.stringify(id));
  const more = ids.length > NAMED ? ` and ${ids.length - NAMED} more` : '';
  throw new InputError(
    `${source}: ${ids.length} id${ids.length === 1 ? ' is' : 's are'} not in the dataset: ${named.join(', ')}${more}`,
  );
}
