/**
 * A nested JSONL dataset as a user runs it: the suite names fields inside the rows by dot paths,
 * recodes the gold, and the columns it does not name come out with every result, in
 * results.jsonl and as `column:<name>` columns of labeled.csv (a column named like one of
 * labeled.csv's own headers included).
 */
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readRows } from '../../shared/lib/datasets/read.js';
import type { ItemResult } from '../../shared/model/model.js';
import { assayCli, chunksOf, tempDir } from '../helpers.js';

describe('dataset columns, end to end', { timeout: 120_000 }, () => {
  it('dot paths and recode read the rows; unnamed columns reach results.jsonl and labeled.csv', async () => {
    const dir = await tempDir('assay-e2e-columns-');
    const rows = Array.from({ length: 6 }, (_, i) => ({
      id: `r${i}`,
      turn: { user: { text: `Question ${i}?` } },
      verdict: { 'human label': i % 2 === 0 ? 1 : 2 },
      topic: i < 3 ? 'billing' : 'shipping',
      status: '=open',
      meta: { source: 'web', n: i },
    }));
    await writeFile(join(dir, 'data.jsonl'), `${rows.map((r) => JSON.stringify(r)).join('\n')}\n`);
    await mkdir(join(dir, 'prompts'));
    await writeFile(
      join(dir, 'prompts', 'judge.md'),
      'Is the question answerable?\n\n<question>\n{question}\n</question>\n',
    );
    await writeFile(
      join(dir, 'suite.json'),
      JSON.stringify({
        version: 1,
        name: 'nested',
        task: 'judge',
        dataset: {
          path: 'data.jsonl',
          columns: { gold: 'verdict.human label', question: 'turn.user.text' },
          recode: { gold: { '1': 'yes', '2': 'no' } },
        },
        judge: { prompt: 'prompts/judge.md', labels: ['yes', 'no'] },
        backends: ['openai:gpt-4o-mini'],
      }),
    );
    const runs = join(dir, 'runs');
    await assayCli(['run', join(dir, 'suite.json'), '--simulate', '--runs', runs, '--no-progress'], dir);
    // The run's folder (beside it, the runs folder's leaderboard.jsonl).
    const folder = (await readdir(runs, { withFileTypes: true })).find((entry) => entry.isDirectory())?.name;
    const out = join(runs, folder!);

    const results = (await readFile(join(out, 'results.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as ItemResult)
      .sort((a, b) => a.row - b.row);
    expect(results.map((r) => r.status)).toEqual(Array(6).fill('scored'));
    expect(results[0]).toMatchObject({
      gold: 'yes',
      input: { question: 'Question 0?' },
      columns: { topic: 'billing', status: '=open', meta: '{"source":"web","n":0}' },
    });
    expect(results[1]!.gold).toBe('no');

    const csv: Record<string, string>[] = [];
    const text = await readFile(join(out, 'labeled.csv'), 'utf8');
    let header: string[] = [];
    for await (const raw of readRows(chunksOf(text), 'csv', {
      onHeader: (names) => {
        header = [...names];
      },
    }))
      if (raw.record) csv.push(raw.record);
    expect(header.slice(-3)).toEqual(['column:topic', 'column:status', 'column:meta']);
    expect(header.filter((name) => name === 'status')).toHaveLength(1);
    const first = csv.find((r) => r.idx === 'r0')!;
    expect(first).toMatchObject({
      question: 'Question 0?',
      gold: 'yes',
      'column:topic': 'billing',
      // The cell guard keeps a spreadsheet from reading it as a formula.
      'column:status': "'=open",
      'column:meta': '{"source":"web","n":0}',
    });
  });
});
