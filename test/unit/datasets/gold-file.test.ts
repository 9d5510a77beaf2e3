/**
 * A gold file (`dataset.goldFile`): its labels read by id, checked, merged into the dataset's
 * rows as their gold with `p` as the row's `gold_p`; ids the dataset lacks refused, named.
 */
import { describe, expect, it } from 'vitest';
import {
  checkGoldIds,
  GOLD_P_COLUMN,
  readGoldFile,
  withGoldLabels,
} from '../../../shared/lib/datasets/gold-file.js';
import type { RawRow } from '../../../shared/lib/datasets/read.js';
import { validateSuite } from '../../../shared/registry/suite.js';

async function* rowsOf(records: Record<string, string>[]): AsyncGenerator<RawRow> {
  let row = 0;
  for (const record of records) {
    row += 1;
    yield { row, line: row + 1, record };
  }
}

async function all<T>(rows: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const row of rows) out.push(row);
  return out;
}

describe('readGoldFile', () => {
  it('reads labels by id, a p when given, and skips a blank label', async () => {
    const labels = await readGoldFile(
      rowsOf([
        { id: 'a', label: 'yes', p: '0.25' },
        { id: ' b ', label: 'no', p: '' },
        { id: 'c', label: '  ', p: '0.5' },
      ]),
      'gold.csv',
    );
    expect([...labels]).toEqual([
      ['a', { label: 'yes', p: 0.25 }],
      ['b', { label: 'no' }],
    ]);
  });

  it('refuses a file without the columns, a duplicate id, a p that is not a probability', async () => {
    await expect(readGoldFile(rowsOf([{ item: 'a', label: 'x' }]), 'g.csv')).rejects.toThrow(
      /g\.csv row 1: a gold file has the columns id and label/,
    );
    await expect(
      readGoldFile(
        rowsOf([
          { id: 'a', label: 'x' },
          { id: 'a', label: 'y' },
        ]),
        'g.csv',
      ),
    ).rejects.toThrow(/g\.csv row 2: id "a" again/);
    for (const p of ['0', '1.5', 'half', '-0.1'])
      await expect(readGoldFile(rowsOf([{ id: 'a', label: 'x', p }]), 'g.csv')).rejects.toThrow(
        /is not a probability in \(0, 1\]/,
      );
  });
});

describe('withGoldLabels', () => {
  const labels = new Map([
    ['1', { label: 'yes', p: 0.2 }],
    ['3', { label: 'no' }],
  ]);

  it("sets the listed rows' gold over their own, with p; the rest keep theirs", async () => {
    const rows = await all(
      withGoldLabels(
        rowsOf([
          { id: '1', human: 'no' },
          { id: '2', human: 'yes' },
          { id: '3', human: '' },
        ]),
        labels,
        { id: 'id', gold: 'human' },
      ),
    );
    expect(rows.map((r) => r.record)).toEqual([
      { id: '1', human: 'yes', [GOLD_P_COLUMN]: '0.2' },
      { id: '2', human: 'yes' },
      { id: '3', human: 'no' },
    ]);
  });

  it('gives a blank gold to a row of a dataset without the gold column, and uses the first default present', async () => {
    const named = await all(withGoldLabels(rowsOf([{ id: '2' }]), labels, { id: 'id', gold: 'human' }));
    expect(named[0]!.record).toEqual({ id: '2', human: '' });
    const defaults = await all(
      withGoldLabels(rowsOf([{ id: '3', label: '' }, { id: '1' }]), labels, {
        id: 'id',
        gold: ['gold', 'label'],
      }),
    );
    expect(defaults.map((r) => r.record)).toEqual([
      { id: '3', label: 'no' },
      { id: '1', gold: 'yes', [GOLD_P_COLUMN]: '0.2' },
    ]);
  });
});

describe('checkGoldIds', () => {
  it('passes when every id is in the dataset', async () => {
    await expect(
      checkGoldIds(
        rowsOf([{ id: '1' }, { id: '3' }, { id: '4' }]),
        new Map([['1', { label: 'x' }]]),
        { id: 'id', gold: 'g' },
        'g.csv',
      ),
    ).resolves.toBeUndefined();
  });

  it('names the ids the dataset does not have, ten at most', async () => {
    const labels = new Map<string, { label: string }>(
      Array.from({ length: 13 }, (_, i) => [`x${i}`, { label: 'y' }]),
    );
    labels.set('1', { label: 'y' });
    await expect(
      checkGoldIds(rowsOf([{ id: '1' }]), labels, { id: 'id', gold: 'g' }, 'g.csv'),
    ).rejects.toThrow(/g\.csv: 13 ids are not in the dataset: "x0", "x1", .*"x9" and 3 more/);
  });

  it('says so when the dataset has no id column', async () => {
    await expect(
      checkGoldIds(
        rowsOf([{ key: '1' }]),
        new Map([['1', { label: 'x' }]]),
        { id: 'id', gold: 'g' },
        'g.csv',
      ),
    ).rejects.toThrow(/no id column "id"/);
  });
});

describe('dataset.partialGold and dataset.goldFile in a suite', () => {
  const judge = {
    version: 1,
    name: 's',
    task: 'judge',
    judge: { prompt: 'p.md', labels: ['a', 'b'] },
    backends: ['sim:x'],
  };

  it('are accepted for a judge', () => {
    const suite = validateSuite(
      { ...judge, dataset: { path: 'd.csv', partialGold: true, goldFile: 'gold.csv' } },
      'test',
    );
    expect(suite.dataset).toMatchObject({ partialGold: true, goldFile: 'gold.csv' });
  });

  it('are refused for a task that scores every item against its gold', () => {
    expect(() =>
      validateSuite(
        {
          version: 1,
          name: 'q',
          task: 'qa',
          dataset: { path: 'd.csv', partialGold: true },
          backends: ['sim:x'],
        },
        'test',
      ),
    ).toThrow(/dataset\.partialGold.*task qa scores each item against its gold/s);
  });
});
