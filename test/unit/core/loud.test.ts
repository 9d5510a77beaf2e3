/**
 * The logic behind the loud failures: which columns `assay score` reads, which suite columns a
 * dataset lacks, which earlier run a report compares with, and a report's completeness.
 */
import { cp, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { missingColumns, runLocal } from '../../../cli/local-run.js';
import { chooseColumns } from '../../../cli/score.js';
import { fileColumns } from '../../../shared/lib/datasets/columns.js';
import type { ItemResult, RunRecord } from '../../../shared/model/model.js';
import { taskFor } from '../../../shared/registry/registry.js';
import { buildReport } from '../../../shared/reports/report.js';
import { REPO, suite, tempDir } from '../../helpers.js';

const GEC = taskFor({ task: 'gec' }).suite;
const gec = (gold: string[] | undefined, predictions: string[], flags = {}, mappedId?: string) =>
  chooseColumns({
    gold: gold && { name: 'gold.csv', columns: gold },
    predictions: { name: 'predictions.csv', columns: predictions },
    goldCandidates: GEC.goldColumns!,
    outputCandidates: GEC.outputColumns!,
    ...(mappedId ? { mappedId } : {}),
    flags,
  });

describe('chooseColumns (assay score)', () => {
  it('takes the one output column of the predictions file, and the gold and id columns of the gold file', () => {
    expect(gec(['idx', 'src', 'tgt', 'tp_fp_label'], ['idx', 'judge_label', 'reason'])).toEqual({
      id: { gold: 'idx', predictions: 'idx' },
      gold: 'tp_fp_label',
      prediction: 'judge_label',
    });
    expect(gec(['id', 'src', 'tgt', 'label'], ['id', 'pred']).prediction).toBe('pred');
  });

  it("joins on the suite's id column, and on a predictions id named apart with --pred-id-column", () => {
    // The suite maps columns.id: the gold file's id, tried first in the predictions file.
    expect(
      gec(['question_id', 'src', 'tgt', 'label'], ['question_id', 'pred'], {}, 'question_id').id,
    ).toEqual({
      gold: 'question_id',
      predictions: 'question_id',
    });
    expect(gec(['question_id', 'src', 'tgt', 'label'], ['idx', 'pred'], {}, 'question_id').id).toEqual({
      gold: 'question_id',
      predictions: 'idx',
    });
    // A single file's items take the suite's id too.
    expect(gec(undefined, ['key', 'idx', 'src', 'tgt', 'label', 'pred'], {}, 'key').id).toEqual({
      predictions: 'key',
    });
    // Each file's own id column.
    expect(gec(['idx', 'src', 'tgt', 'label'], ['item', 'pred'], { predIdColumn: 'item' }).id).toEqual({
      gold: 'idx',
      predictions: 'item',
    });
    expect(() => gec(['idx', 'src', 'tgt', 'label'], ['item', 'pred'])).toThrow(
      /predictions\.csv has no id column to join on \(idx or id; .*\): name it with --pred-id-column/,
    );
  });

  it("never takes the gold column, or a column named gold, for the prediction (a run's labeled.csv)", () => {
    const labeled = ['idx', 'row', 'src', 'tgt', 'gold', 'status', 'failure', 'label', 'label.by', 'reason'];
    expect(() => gec(['idx', 'src', 'tgt', 'label'], labeled)).toThrow(
      /cannot tell which column of predictions\.csv holds the predictions: .*"gold", "label" are there but never taken for the prediction \("label" is the gold column of gold\.csv\)\. Name it with --pred-column/,
    );
    // Named, it is read from the predictions file: not the gold file's column of the same name.
    expect(gec(['idx', 'src', 'tgt', 'label'], labeled, { predColumn: 'label' })).toMatchObject({
      gold: 'label',
      prediction: 'label',
    });
  });

  it('refuses the gold column of a single file even when named, and an ambiguous choice', () => {
    expect(() => gec(undefined, ['idx', 'src', 'tgt', 'label'])).toThrow(/--pred-column/);
    expect(() => gec(undefined, ['idx', 'src', 'tgt', 'label'], { predColumn: 'label' })).toThrow(
      '--pred-column label is the gold column of predictions.csv: scoring it would compare the gold with itself',
    );
    expect(() => gec(['idx', 'label'], ['idx', 'pred', 'prediction'])).toThrow(
      'predictions.csv has several columns that could hold the predictions: "pred", "prediction". Name one with --pred-column <column>',
    );
  });

  it('in a file that holds everything, takes the id the families read (id, idx, question_id)', () => {
    expect(gec(undefined, ['question_id', 'idx', 'src', 'tgt', 'label', 'pred']).id).toEqual({
      predictions: 'idx',
    });
    expect(gec(undefined, ['src', 'tgt', 'label', 'pred']).id).toEqual({ predictions: undefined });
  });

  it('says which named column is not there, and which file has no id to join on', () => {
    expect(() => gec(['idx', 'label'], ['idx', 'pred'], { predColumn: 'guess' })).toThrow(
      'the prediction column "guess" is not in predictions.csv (its columns: idx, pred)',
    );
    expect(() => gec(['idx', 'label'], ['idx', 'pred'], { goldColumn: 'human' })).toThrow(
      'the gold column "human" is not in gold.csv (its columns: idx, label)',
    );
    expect(() => gec(['idx', 'label'], ['key', 'pred'])).toThrow(
      'predictions.csv has no id column to join on (idx or id; its columns: key, pred): name it with --pred-id-column',
    );
    expect(gec(['key', 'label'], ['key', 'pred'], { idColumn: 'key' }).id).toEqual({
      gold: 'key',
      predictions: 'key',
    });
  });
});

describe('dataset columns', () => {
  it("reads a CSV's header (with a BOM) and a JSONL file's keys, and names the mapped columns missing", async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'a.csv'), '\uFEFFid, reply ,human\n1,hi,polite\n');
    await writeFile(join(dir, 'b.jsonl'), '{"id":1,"q":"x"}\nnot json\n{"id":2,"answer":"y"}\n');
    await writeFile(join(dir, 'c.csv'), '');
    expect(await fileColumns(join(dir, 'a.csv'), 'csv')).toEqual(['id', 'reply', 'human']);
    expect(await fileColumns(join(dir, 'b.jsonl'), 'jsonl')).toEqual(['id', 'q', 'answer']);
    expect(await fileColumns(join(dir, 'c.csv'), 'csv')).toEqual([]);
    expect(missingColumns({ gold: 'humman', output: 'assay:output', id: 'id' }, ['id', 'human'])).toEqual([
      { role: 'gold', column: 'humman' },
    ]);
    // Columns unknown (no header): nothing is claimed missing.
    expect(missingColumns({ gold: 'humman' }, [])).toEqual([]);
  });
});

describe('report status', () => {
  const run = (total: number | undefined): RunRecord => ({
    schemaVersion: 2,
    runId: 'r1',
    suiteName: 's',
    suite: suite(),
    prompts: {},
    status: 'running',
    ...(total !== undefined ? { total } : {}),
    invalidRows: 0,
    startedAt: '2026-01-01T00:00:00.000Z',
    reportPrefix: '',
    datasetKey: 'data.csv',
    simulated: false,
  });
  const result = (row: number): ItemResult => ({
    schemaVersion: 2,
    runId: 'r1',
    itemId: `i${row}`,
    row,
    status: 'scored',
    gold: 'TP',
    input: {},
    output: { label: 'TP' },
    scores: { label: { kind: 'label', value: 'TP' } },
    stages: {},
    simulated: false,
    finishedAt: '2026-01-01T00:00:01.000Z',
  });
  const at = '2026-01-01T00:01:00.000Z';

  it('is complete with every item, incomplete with items missing (no finish time), missing unknown before ingest ended', async () => {
    const family = taskFor({ task: 'gec' });
    const results = [result(1), result(2), result(3)];
    expect(await buildReport(run(3), results, family, at)).toMatchObject({
      status: 'complete',
      missingItems: 0,
      finishedAt: at,
    });
    expect(await buildReport(run(5), results, family, at)).toMatchObject({
      status: 'incomplete',
      missingItems: 2,
      finishedAt: null,
    });
    expect(await buildReport(run(undefined), results, family, at)).toMatchObject({
      status: 'incomplete',
      missingItems: null,
      finishedAt: null,
    });
  });
});

describe('auto-comparison with an earlier run', { timeout: 120_000 }, () => {
  it('only with a run of the same suite on the same dataset that scored something', async () => {
    const dir = await tempDir();
    const runsDir = join(dir, 'runs');
    await mkdir(join(dir, 'prompts'));
    await cp(join(REPO, 'examples', 'prompts', 'tone.md'), join(dir, 'prompts', 'tone.md'));
    const all = join(REPO, 'examples', 'data', 'replies.csv');
    const lines = (await readFile(all, 'utf8')).trim().split('\n');
    const part = join(dir, 'part.csv');
    // The header and the first 11 records (a record holds no line break).
    await writeFile(part, `${lines.slice(0, 12).join('\n')}\n`);
    const suiteFile = async (name: string, data: string, gold = 'human') => {
      const path = join(dir, `${name}.suite.json`);
      const s = JSON.parse(await readFile(join(REPO, 'examples', 'reply-tone.suite.json'), 'utf8'));
      await writeFile(
        path,
        JSON.stringify({ ...s, $schema: undefined, dataset: { path: data, columns: { gold } } }),
      );
      return path;
    };
    const go = async (suitePath: string) => {
      const { outcome, run } = await runLocal({
        suitePath,
        runsDir,
        simulate: true,
        fresh: true,
        env: {},
        cachePath: join(dir, 'cache.jsonl'),
      });
      if (outcome.status !== 'written') throw new Error('not written');
      return { runId: run.runId, report: outcome.report };
    };

    const first = await go(await suiteFile('all', all));
    expect(first.report.comparison).toBeUndefined();
    // Another dataset: not compared with the first run.
    const other = await go(await suiteFile('part', part));
    expect(other.report.counts.scored).toBe(11);
    expect(other.report.comparison).toBeUndefined();
    // A run that scored nothing is compared with nothing, and nothing is compared with it.
    const broken = await go(await suiteFile('typo', all, 'humman'));
    expect(broken.report.counts.scored).toBe(0);
    expect(broken.report.comparison).toBeUndefined();
    const again = await go(await suiteFile('all', all));
    expect(again.report.comparison).toMatchObject({ baseRunId: first.runId, paired: 48 });
  });
});
