/**
 * What a stored result may hold: the inputs and columns under one budget (the longest fields cut
 * first, each keeping its opening, length and digest), the other long texts bounded, and a result
 * still too large failed as `storage` with its size, the same whatever shell records it.
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { dynamoItemBytes } from '../../shared/adapters/aws/dynamo-run-store.js';
import { failedResult, type ItemResult, inputDigest, storedFieldLength } from '../../shared/model/model.js';
import {
  resultBytes,
  STORED_RESULT_BYTES,
  storableResult,
  storedResult,
} from '../../shared/model/result-size.js';
import {
  boundedJson,
  CUT_OPENING_CHARS,
  cutText,
  STORED_DETAILS_CHARS,
  STORED_INPUT_CHARS,
  STORED_MESSAGE_CHARS,
  STORED_OUTPUT_CHARS,
  STORED_RAW_CHARS,
  storedFields,
} from '../../shared/model/stored-text.js';

const sha = (text: string) => createHash('sha256').update(text).digest('hex').slice(0, 16);
const total = (fields: Record<string, string>) => Object.values(fields).reduce((n, v) => n + v.length, 0);
/** `n` fields `f0…` of `chars` characters each, each its own text. */
const fields = (n: number, chars: number, prefix = 'f') =>
  Object.fromEntries(
    Array.from({ length: n }, (_, i) => [`${prefix}${i}`, `${prefix}${i}:`.padEnd(chars, String(i % 10))]),
  );

function result(overrides: Partial<ItemResult> = {}): ItemResult {
  return {
    schemaVersion: 2,
    runId: 'run-1',
    itemId: 'item-1',
    row: 7,
    status: 'scored',
    gold: 'yes',
    input: { question: 'q?' },
    output: { label: 'yes', reason: 'because' },
    scores: { label: { kind: 'label', value: 'yes', explanation: 'fine' } },
    stages: {
      judge: {
        calls: 1,
        cachedCalls: 0,
        costUsd: 0.25,
        latencyMs: 10,
        usage: { input: 5, output: 1, cached: 0 },
      },
    },
    simulated: true,
    finishedAt: '2025-01-01T00:00:00.000Z',
    ...overrides,
  };
}

describe('stored inputs: one budget for the input fields and the columns', () => {
  it('keeps fields that fit as they are (the same objects)', () => {
    const input = { a: 'x'.repeat(15_000) };
    const columns = { b: 'short' };
    const stored = storedFields(input, columns);
    expect(stored.input).toBe(input);
    expect(stored.columns).toBe(columns);
  });

  it('cuts a field over 16,000 characters to its opening, length and digest, as results always were', () => {
    const long = 'é'.repeat(20_000);
    const { input } = storedFields({ doc: long, title: 't' });
    expect(input.doc).toBe(
      `${long.slice(0, CUT_OPENING_CHARS)}… [cut: 20000 characters in all, sha256:${sha(long)}]`,
    );
    expect(input.title).toBe('t');
    expect(storedFieldLength(input.doc!)).toBe(20_000);
  });

  it('cuts a row of 30 fields of 15,000 characters longest first until it holds 128,000, columns before the input', () => {
    const input = { question: 'q'.repeat(15_000) };
    const columns = fields(29, 15_000, 'c');
    const stored = storedFields(input, columns);
    const all = { ...stored.input, ...stored.columns };
    expect(total(all)).toBeLessThanOrEqual(STORED_INPUT_CHARS);
    // 450,000 characters: 25 fields cut (of 12,940 saved each) bring it under; the input field stays whole.
    const cut = Object.keys(all).filter((key) => all[key]!.includes('… [cut: '));
    expect(cut).toHaveLength(25);
    expect(stored.input.question).toBe(input.question);
    // Among equals, the later columns go first: c0…c3 stay whole.
    expect(cut).toEqual(Array.from({ length: 25 }, (_, i) => `c${i + 4}`));
    for (const key of cut) {
      const original = columns[key]!;
      expect(all[key]!.startsWith(original.slice(0, CUT_OPENING_CHARS))).toBe(true);
      expect(all[key]!.endsWith(`[cut: 15000 characters in all, sha256:${sha(original)}]`)).toBe(true);
      expect(storedFieldLength(all[key]!)).toBe(15_000);
    }
  });

  it('cuts to shorter openings when cutting every long field to 2,000 is not enough', () => {
    const columns = fields(100, 3_000);
    const { input, columns: stored } = storedFields({}, columns);
    expect(input).toEqual({});
    expect(total(stored!)).toBeLessThanOrEqual(STORED_INPUT_CHARS);
    for (const [key, value] of Object.entries(stored!)) expect(storedFieldLength(value), key).toBe(3_000);
  });

  it('never cuts a field in half a surrogate pair', () => {
    const emoji = '😀'.repeat(10_000);
    const cut = cutText(emoji, 1_999);
    expect(cut.startsWith('😀'.repeat(999))).toBe(true);
    expect(cut.charAt(1_998)).toBe('…');
  });

  it('is the same when applied again: a stored result stores as itself', () => {
    const once = storableResult(
      result({ input: fields(30, 15_000), raw: 'r'.repeat(50_000), details: { many: fields(5_000, 30) } }),
    );
    const twice = storableResult(once);
    // Compared as text: a failure prints a diff of a few lines, not the whole result.
    expect(JSON.stringify(twice) === JSON.stringify(once)).toBe(true);
    expect(once.raw!.length).toBeLessThanOrEqual(STORED_RAW_CHARS);
    expect(storedFieldLength(once.raw!)).toBe(50_000);
  });
});

describe('a stored result: every long text bounded', () => {
  it('cuts the longest strings of the output and details; labels, numbers and shape stay', () => {
    const output = { label: 'yes', reason: 'why '.repeat(30_000), spans: [1, 2, 3] };
    const bounded = boundedJson(output, STORED_OUTPUT_CHARS);
    expect(JSON.stringify(bounded).length).toBeLessThanOrEqual(STORED_OUTPUT_CHARS);
    expect(bounded.label).toBe('yes');
    expect(bounded.spans).toEqual([1, 2, 3]);
    expect(storedFieldLength(bounded.reason)).toBe(120_000);
    // The value given is not changed.
    expect(output.reason).toHaveLength(120_000);
  });

  it('bounds raw text, failure messages, explanations and details, and digests the input as kept', () => {
    const long = 'x'.repeat(100_000);
    const stored = storedResult(
      result({
        status: 'failed',
        input: fields(30, 15_000),
        output: undefined,
        failure: { kind: 'provider', message: long },
        raw: long,
        details: { votes: [{ judge: 'a', reason: long }] },
        scores: {
          label: { kind: 'label', value: 'yes', explanation: long, details: { note: long } },
          other: { kind: 'pass', unscored: { kind: 'parse', message: long } },
        },
      }),
    );
    expect(stored.raw!.length).toBeLessThanOrEqual(STORED_RAW_CHARS);
    expect(stored.failure!.message.length).toBeLessThanOrEqual(STORED_MESSAGE_CHARS);
    expect(JSON.stringify(stored.details).length).toBeLessThanOrEqual(STORED_DETAILS_CHARS);
    expect(stored.scores.label).toMatchObject({ kind: 'label', value: 'yes' });
    expect(stored.scores.label!.explanation!.length).toBeLessThanOrEqual(8_000);
    expect(JSON.stringify(stored.scores.label!.details).length).toBeLessThanOrEqual(8_000);
    expect(
      (stored.scores.other as { unscored: { message: string } }).unscored.message.length,
    ).toBeLessThanOrEqual(STORED_MESSAGE_CHARS);
    expect(stored.inputDigest).toBe(inputDigest({ input: stored.input, gold: 'yes' }));
    expect(resultBytes(stored)).toBeLessThan(200 * 1024);
  });

  it('keeps the input of a failed result (a dead letter, an invalid row) as a scored one keeps it', () => {
    const input = fields(30, 15_000);
    const failed = failedResult(
      { runId: 'r', itemId: 'i', row: 1, input, gold: 'yes', part: undefined },
      { kind: 'dead_letter', message: 'exhausted its receives' },
      new Date(0),
    );
    expect(failed.input).toEqual(storedFields(input).input);
    expect(failed.inputDigest).toBe(storedResult(result({ input })).inputDigest);
  });
});

describe('a result too large to store', () => {
  it('fails as storage, saying by how many KB, keeping what the item spent', () => {
    // 40,000 columns of 30 characters: too short to cut, 1.2 million characters in all.
    const columns = fields(40_000, 30);
    const stored = storableResult(result({ columns, part: 2 }));
    expect(stored.status).toBe('failed');
    expect(stored.failure?.kind).toBe('storage');
    expect(stored.failure?.message).toMatch(
      /^the result of item "item-1" \(row 7\) is \d+ KB, \d+ KB over the 1024 KB a stored result may hold/,
    );
    expect(stored).toMatchObject({ input: {}, scores: {}, part: 2, gold: 'yes', stages: result().stages });
    expect(stored.columns).toBeUndefined();
    expect(resultBytes(stored)).toBeLessThan(STORED_RESULT_BYTES);
  });
});

describe("DynamoDB's measure of an item", () => {
  it('counts attribute names and UTF-8 values, numbers by their digits, sets and maps with their overhead', () => {
    expect(dynamoItemBytes({ pk: 'ab', sk: 'é' })).toBe(2 + 2 + 2 + 2);
    expect(dynamoItemBytes({ n: 12.5, ok: true, gone: undefined })).toBe(1 + 5 + 2 + 1);
    expect(dynamoItemBytes({ rows: new Set([1, 22]) })).toBe(4 + 3 + (1 + 2) + (1 + 3));
    expect(dynamoItemBytes({ result: 'x'.repeat(401 * 1024) })).toBeGreaterThan(400 * 1024);
  });
});
