/**
 * How a suite names the fields of a dataset row: dot paths into nested JSON (arrays, objects,
 * keys with dots or spaces, the exact column first), an object never read as text, values
 * extracted and recoded, several annotators' majority, and the row's other columns kept.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FolderBlobStore, LayeredBlobStore } from '../../../shared/adapters/local/folder-blob-store.js';
import { finalNumber } from '../../../shared/families/qa/fast-path.js';
import { majorityOf } from '../../../shared/family/dataset-row.js';
import { readField } from '../../../shared/lib/datasets/fields.js';
import { type DatasetFormat, readRows } from '../../../shared/lib/datasets/read.js';
import type { Item } from '../../../shared/model/model.js';
import { validateSuite } from '../../../shared/registry/suite.js';
import { prepareRun } from '../../../shared/use-cases/prepare-run.js';
import { type ParsedRow, rowParser } from '../../../shared/use-cases/start-run.js';
import { chunksOf, REPO, tempDir } from '../../helpers.js';

const NESTED = {
  id: 'x1',
  'a.b': 'exact',
  a: { b: 'nested', 'c.d': { e: 'dotted key' } },
  summary_sentences: [{ responses: [{ response: 'yes' }, { response: 'no' }, { response: 'yes' }] }],
  results: [{ 'swap = False': { winner: 'model_1' }, swap: { winner: 'model_2' } }],
  n: 3,
};

/** A JSONL row as the reader gives it. */
async function rowOf(value: Record<string, unknown>) {
  for await (const raw of readRows(chunksOf(`${JSON.stringify(value)}\n`), 'jsonl')) return raw;
  throw new Error('no row');
}

describe('reading a field by name', () => {
  it('follows dot paths into arrays and objects; the longest key first; the exact column wins', async () => {
    const raw = await rowOf(NESTED);
    expect(raw.structured).toHaveProperty('summary_sentences');
    const text = (name: string) => {
      const field = readField({ record: raw.record!, structured: raw.structured }, name);
      return field?.kind === 'text' ? field.value : field?.kind;
    };
    expect(text('summary_sentences.0.responses.1.response')).toBe('no');
    expect(text('a.b')).toBe('exact');
    expect(text('a.c.d.e')).toBe('dotted key');
    expect(text('results.0.swap = False.winner')).toBe('model_1');
    expect(text('results.0.swap.winner')).toBe('model_2');
    expect(text('n')).toBe('3');
    expect(text('a')).toBe('structured');
    expect(text('summary_sentences.0.responses')).toBe('structured');
    expect(text('summary_sentences.1.responses')).toBeUndefined();
    expect(text('a.missing')).toBeUndefined();
    const many = readField(
      { record: raw.record!, structured: raw.structured },
      'summary_sentences.0.responses.*.response',
    );
    expect(many?.kind === 'many' && many.values.map((f) => f?.kind === 'text' && f.value)).toEqual([
      'yes',
      'no',
      'yes',
    ]);
  });

  it('reads into a CSV cell that holds JSON text', () => {
    const field = readField({ record: { meta: '{"lang": "de", "tags": ["a", "b"]}' } }, 'meta.tags.1');
    expect(field).toEqual({ kind: 'text', value: 'b' });
  });

  it('takes the majority of several labels; a tie is invalid unless the first tied label is asked for', () => {
    expect(majorityOf(['A', 'B', 'A'], 'invalid')).toEqual({ value: 'A' });
    expect(majorityOf(['A', '', 'B', ''], 'invalid').error).toMatch(/annotators tie/);
    expect(majorityOf(['B', 'A', 'A', 'B'], 'first')).toEqual({ value: 'B' });
    expect(majorityOf(['', ''], 'invalid')).toEqual({ value: '' });
  });
});

/** Rows of `format` text through ingest's row parser for a suite (with a judge prompt `j.md`). */
async function parsed(
  suite: Record<string, unknown>,
  text: string,
  format: DatasetFormat = 'jsonl',
  prompt = '<question>\n{question}\n</question>\n',
): Promise<ParsedRow[]> {
  const dir = await tempDir('assay-columns-');
  await mkdir(join(dir, 'prompts'), { recursive: true });
  await writeFile(join(dir, 'prompts', 'j.md'), prompt);
  const run = await prepareRun({
    suite: validateSuite({ version: 1, name: 'cols', backends: ['sim:x'], ...suite }, 'test suite'),
    prompts: new LayeredBlobStore([new FolderBlobStore(dir), new FolderBlobStore(REPO)]),
    datasetKey: 'data',
    datasetVersion: 'v1',
    reportPrefix: 'reports/{runId}/',
  });
  const parse = rowParser(run);
  const out: ParsedRow[] = [];
  for await (const raw of readRows(chunksOf(text), format, {
    maxFieldChars: run.suite.dataset.maxFieldChars,
  }))
    out.push(parse(raw));
  return out;
}

const jsonl = (...rows: Record<string, unknown>[]) => `${rows.map((r) => JSON.stringify(r)).join('\n')}\n`;
const itemOf = (row: ParsedRow | undefined): Item => {
  if (!row || !('item' in row)) throw new Error(`not an item: ${JSON.stringify(row)}`);
  return row.item;
};
const errorOf = (row: ParsedRow | undefined) => (row && 'error' in row ? row.error : undefined);

const judge = (dataset: Record<string, unknown>, block: Record<string, unknown> = {}) => ({
  task: 'judge',
  dataset: { path: 'd.jsonl', ...dataset },
  judge: { prompt: 'j.md', labels: ['yes', 'no'], ...block },
});

describe('a dataset row read as the suite names it', () => {
  it('reads the gold and a prompt placeholder by dot paths', async () => {
    const [row] = await parsed(
      judge({ columns: { gold: 'summary_sentences.0.responses.1.response', question: 'a.c.d.e' } }),
      jsonl(NESTED),
    );
    const item = itemOf(row);
    expect(item).toMatchObject({ id: 'x1', gold: 'no', input: { question: 'dotted key' } });
  });

  it('keeps the gold of an invalid row as the row gives it, for the report to show', async () => {
    const rows = await parsed(
      judge({ columns: { gold: 'verdict' } }),
      jsonl({ id: 'a', question: 'q', verdict: 'maybe' }, { id: 'b', verdict: 'yes' }),
    );
    // A gold that is not a label: the family's reading of it.
    expect(rows[0]).toMatchObject({ error: expect.stringMatching(/gold "maybe"/), gold: 'maybe' });
    // Another reason (no column for {question}): the column the suite names.
    expect(rows[1]).toMatchObject({ error: expect.stringMatching(/missing column question/), gold: 'yes' });
  });

  it('an object reaching an input or the gold is an invalid row that names the column', async () => {
    const [input, gold, fine] = await parsed(
      judge({ columns: { gold: 'g' } }),
      jsonl(
        { question: { text: 'Why?' }, g: 'yes' },
        { question: 'Why?', g: ['yes', 'no'] },
        { question: 'Why?', g: 'yes' },
      ),
    );
    expect(errorOf(input)).toBe('column "question" is an object: name a field inside it, e.g. question.text');
    expect(errorOf(gold)).toBe('column "g" is an array: name a field inside it, e.g. g.0');
    expect(itemOf(fine).gold).toBe('yes');
  });

  it('a path that does not resolve is a missing column', async () => {
    const [row] = await parsed(
      judge({ columns: { gold: 'g', question: 'q.0.text' } }),
      jsonl({ q: [], g: 'yes' }),
    );
    expect(errorOf(row)).toMatch(/^missing column q\.0\.text for \{question\}/);
  });

  it('recodes the values a role reads (LLMBar: 1 and 2 are A and B); others pass unchanged', async () => {
    const rows = await parsed(
      judge(
        { columns: { gold: 'label' }, recode: { gold: { '1': 'A', '2': 'B' } } },
        { labels: ['A', 'B', 'tie'] },
      ),
      jsonl({ question: 'q', label: 1 }, { question: 'q', label: '2' }, { question: 'q', label: 'tie' }),
    );
    expect(rows.map((r) => itemOf(r).gold)).toEqual(['A', 'B', 'tie']);
  });

  it('extracts the capture of a GSM8K answer before recoding; no match is an invalid row', async () => {
    const rows = await parsed(
      {
        task: 'qa',
        dataset: {
          path: 'gsm8k.jsonl',
          columns: { gold: 'answer' },
          extract: { gold: '####\\s*([-0-9.,]+)\\s*$' },
          recode: { gold: { '0': 'zero' } },
        },
        qa: { type: 'numeric', tolerance: 0 },
      },
      jsonl(
        { question: 'How many?', answer: 'She has 1,000 + 234 = <<1000+234=1234>>1,234 eggs.\n#### 1,234' },
        { question: 'How many?', answer: 'Twelve.\n#### 12\n' },
        { question: 'How many?', answer: 'no marker here' },
      ),
    );
    expect(itemOf(rows[0]).gold).toBe('1,234');
    const read = finalNumber(itemOf(rows[0]).gold!);
    expect(read.decided && read.value.value).toBe(1234);
    expect(itemOf(rows[1]).gold).toBe('12');
    expect(errorOf(rows[2])).toBe(
      'gold "no marker here" does not match dataset.extract.gold (####\\s*([-0-9.,]+)\\s*$)',
    );
  });

  it('refuses an extract pattern without exactly one capture group, and a role the task lacks', () => {
    const check = (dataset: Record<string, unknown>) => () =>
      validateSuite({ version: 1, name: 'x', backends: ['sim:x'], ...judge(dataset) }, 'test suite');
    expect(check({ extract: { gold: '####\\s*[0-9]+' } })).toThrow(/exactly one capture group.*it has 0/);
    expect(check({ extract: { gold: '(a)(b)' } })).toThrow(/exactly one capture group.*it has 2/);
    expect(check({ extract: { gold: '(?:a)(b)' } })).not.toThrow();
    expect(check({ extract: { gold: '(' } })).toThrow(/not a regular expression/);
    const qa = () =>
      validateSuite(
        {
          version: 1,
          name: 'x',
          task: 'qa',
          dataset: { path: 'x.csv', recode: { goldd: { a: 'b' } } },
          backends: ['sim:x'],
        },
        'test suite',
      );
    expect(qa).toThrow(/"goldd" is not a column role of this task/);
  });

  it('several annotators as a list of columns: the majority, each one kept, a tie invalid', async () => {
    const rows = await parsed(
      judge({ columns: { gold: ['w1', 'w2', 'w3'] }, recode: { gold: { y: 'yes', n: 'no' } } }),
      jsonl(
        { question: 'a', w1: 'y', w2: 'n', w3: 'yes' },
        { question: 'b', w1: 'y', w2: 'n', w3: '' },
        { question: 'c', w1: 'n', w3: 'n' },
      ),
    );
    expect(itemOf(rows[0])).toMatchObject({ gold: 'yes', annotations: ['yes', 'no', 'yes'] });
    expect(errorOf(rows[1])).toMatch(/^the annotators tie: "yes" ×1, "no" ×1/);
    expect(itemOf(rows[2])).toMatchObject({ gold: 'no', annotations: ['no', '', 'no'] });
    expect(itemOf(rows[0]).columns).toBeUndefined();
  });

  it('several annotators in a nested array (QAGS): a path with *; goldTie first takes the earliest', async () => {
    const qags = (...labels: string[]) => ({
      question: 'q',
      summary_sentences: [
        { sentence: 's', responses: labels.map((response) => ({ response, worker_id: 7 })) },
      ],
    });
    const path = 'summary_sentences.0.responses.*.response';
    const [majority, tie] = await parsed(
      judge({ columns: { gold: path } }),
      jsonl(qags('no', 'yes', 'no'), qags('yes', 'no')),
    );
    expect(itemOf(majority)).toMatchObject({ gold: 'no', annotations: ['no', 'yes', 'no'] });
    expect(errorOf(tie)).toMatch(/annotators tie/);
    const [first] = await parsed(
      judge({ columns: { gold: path }, goldTie: 'first' }),
      jsonl(qags('yes', 'no')),
    );
    expect(itemOf(first)).toMatchObject({ gold: 'yes', annotations: ['yes', 'no'] });
  });

  it('keeps the columns no role names (objects as JSON text, each cut to maxFieldChars)', async () => {
    const [row] = await parsed(
      judge({ columns: { gold: 'label' }, maxFieldChars: 40 }),
      jsonl({
        id: 'r1',
        question: 'q',
        label: 'yes',
        topic: 'billing',
        meta: { source: 'web', n: 2 },
        history: { turns: ['x'.repeat(30), 'y'.repeat(30)] },
      }),
    );
    expect(itemOf(row).columns).toEqual({
      topic: 'billing',
      meta: '{"source":"web","n":2}',
      history: `{"turns":["${'x'.repeat(30)}`.slice(0, 40),
    });
  });

  it('a CSV row keeps its unnamed columns too', async () => {
    const [row] = await parsed(
      judge({ path: 'd.csv', columns: { gold: 'label' } }),
      'id,question,label,annotator,split\n1,q,yes,ann-3,test\n',
      'csv',
    );
    expect(itemOf(row).columns).toEqual({ annotator: 'ann-3', split: 'test' });
  });
});
