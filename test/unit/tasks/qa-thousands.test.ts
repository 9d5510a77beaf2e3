/**
 * QA numbers written with thousands separators (GSM8K keys, model answers): `1,000` is 1000 and
 * `1,234.5` is 1234.5, as keys and as answers; a comma that is not a thousands separator
 * still separates numbers.
 */
import { describe, expect, it } from 'vitest';
import { fastGrade, finalNumber } from '../../../shared/families/qa/fast-path.js';
import type { QaSuite } from '../../../shared/families/qa/suite.js';
import { qaFamily } from '../../../shared/families/qa/task.js';
import { validateSuite } from '../../../shared/registry/suite.js';

const suite = validateSuite(
  {
    version: 1,
    name: 'qa-thousands',
    task: 'qa',
    dataset: { path: 'q.jsonl' },
    qa: { type: 'numeric', tolerance: 0 },
    backends: ['sim:answerer'],
  },
  'qa test',
) as unknown as QaSuite;

const numberIn = (text: string) => {
  const read = finalNumber(text);
  return read.decided ? read.value.value : undefined;
};

describe('QA numbers with thousands separators', () => {
  it('reads 1,000 as 1000 and 1,234.5 as 1234.5, signed or in a sentence', () => {
    expect(numberIn('1,000')).toBe(1000);
    expect(numberIn('1,234.5')).toBe(1234.5);
    expect(numberIn('-12,345,678.25')).toBe(-12345678.25);
    expect(numberIn('The answer is 1,234 eggs.')).toBe(1234);
  });

  it('a comma between numbers that is no thousands separator still separates them', () => {
    expect(numberIn('1,5')).toBeUndefined();
    expect(numberIn('x = 3, y = 4')).toBeUndefined();
  });

  it('a key with separators is a numeric key, graded against answers with or without them', () => {
    const parsed = qaFamily.parseRow({ question: 'How many eggs?', answer: '1,234' }, 1, suite, {});
    expect(parsed).toMatchObject({ item: { gold: '1,234' } });
    expect(fastGrade('numeric', '1234', '1,234', { tolerance: 0 })).toMatchObject({
      decided: true,
      correct: true,
    });
    expect(fastGrade('numeric', 'She sold 1,234.5 kg.', '1234.5', { tolerance: 0 })).toMatchObject({
      decided: true,
      correct: true,
    });
    expect(fastGrade('numeric', '1,000', '1,234', { tolerance: 0 })).toMatchObject({
      decided: true,
      correct: false,
    });
  });
});
