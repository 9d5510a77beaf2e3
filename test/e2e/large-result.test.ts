/**
 * Rows whose results are larger than a DynamoDB item, as a user runs them locally with
 * `assay run --simulate`: a row of 30 fields of 15,000 characters is scored and stored with its
 * fields cut to one budget (the longest first, each keeping its opening, its length and its
 * digest), as the AWS shell stores it; a row too large to store even cut ends as a `storage`
 * failure whose reason says by how many KB; every row ends as exactly one result.
 */
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { type ItemResult, storedFieldLength } from '../../shared/model/model.js';
import { DYNAMO_ITEM_BYTES, resultBytes, STORED_RESULT_BYTES } from '../../shared/model/result-size.js';
import { STORED_INPUT_CHARS } from '../../shared/model/stored-text.js';
import { assayCli, tempDir } from '../helpers.js';
import { LARGE_ROWS, largeDataset, writeLargeSuite } from '../integration/large-result-data.js';

let out: string;
let results: Map<string, ItemResult>;
let stdout: string;

const cut = (value: string) => /… \[cut: \d+ characters in all, sha256:[0-9a-f]{16}\]$/.test(value);
const stored = (result: ItemResult) => ({ ...result.input, ...result.columns });

beforeAll(async () => {
  const dir = await tempDir('assay-e2e-large-');
  const suitePath = await writeLargeSuite(dir, 'large', ['openai:gpt-4o-mini']);
  const runs = join(dir, 'runs');
  ({ stdout } = await assayCli(['run', suitePath, '--simulate', '--runs', runs, '--no-progress'], dir));
  const [folder] = await readdir(runs);
  out = join(runs, folder!);
  const lines = (await readFile(join(out, 'results.jsonl'), 'utf8')).trim().split('\n');
  results = new Map(
    lines.map((line) => JSON.parse(line) as ItemResult).map((result) => [result.itemId, result]),
  );
}, 170_000);

describe('results larger than a DynamoDB item, run locally', { timeout: 60_000 }, () => {
  it('ends every row as exactly one result', () => {
    expect([...results.keys()].sort()).toEqual([...LARGE_ROWS].sort());
    expect(stdout).toContain('large');
  });

  it('stores the row of 30 fields of 15,000 characters scored, its fields cut longest first to 128,000 characters', () => {
    const wide = results.get('wide')!;
    expect(wide.status).toBe('scored');
    const fields = stored(wide);
    expect(Object.keys(fields)).toHaveLength(30);
    expect(Object.values(fields).reduce((n, v) => n + v.length, 0)).toBeLessThanOrEqual(STORED_INPUT_CHARS);
    // 25 of the 30 are cut (the last columns first); the question the judge read stays whole.
    const cutNames = Object.keys(fields).filter((name) => cut(fields[name]!));
    expect(cutNames).toEqual(Array.from({ length: 25 }, (_, i) => `c${i + 5}`));
    expect(wide.input.question).toHaveLength(15_000);
    const row = JSON.parse(largeDataset().split('\n')[0]!) as Record<string, string>;
    for (const name of cutNames) {
      const whole = row[name]!;
      const digest = createHash('sha256').update(whole).digest('hex').slice(0, 16);
      expect(fields[name]).toBe(`${whole.slice(0, 2_000)}… [cut: 15000 characters in all, sha256:${digest}]`);
      expect(storedFieldLength(fields[name]!)).toBe(15_000);
    }
    expect(resultBytes(wide)).toBeLessThan(DYNAMO_ITEM_BYTES);
  });

  it('stores a row still over 400 KB once cut (the AWS shell keeps it by S3 reference)', () => {
    const dense = results.get('dense')!;
    expect(dense.status).toBe('scored');
    expect(resultBytes(dense)).toBeGreaterThan(DYNAMO_ITEM_BYTES);
    expect(resultBytes(dense)).toBeLessThanOrEqual(STORED_RESULT_BYTES);
  });

  it('fails a row too large to store even cut as storage, saying by how much, in results and errors.txt', async () => {
    const many = results.get('many')!;
    expect(many).toMatchObject({ status: 'failed', failure: { kind: 'storage' }, input: {}, gold: 'yes' });
    expect(many.failure!.message).toMatch(
      /^the result of item "many" \(row 4\) is \d+ KB, \d+ KB over the 1024 KB a stored result may hold/,
    );
    // The model was called, and what it cost is kept.
    expect(Object.values(many.stages).reduce((n, stage) => n + stage.calls, 0)).toBeGreaterThan(0);
    const errors = await readFile(join(out, 'errors.txt'), 'utf8');
    expect(errors).toContain('KB over the 1024 KB a stored result may hold');
    expect(results.get('small')).toMatchObject({ status: 'scored', input: { question: 'Is this short?' } });
  });
});
