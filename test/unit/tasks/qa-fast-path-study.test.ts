/**
 * The QA fast path on the physics QA study's own answers (`test/fixtures/qa/study-results.csv`,
 * the study's results layout: its 140 MCQ and numeric answers from four configurations). Each
 * answer was read by hand for what it commits to — the option it selects, or the final number it
 * states, empty when it gives no single one (`study-hand-checked.csv`). A fast verdict is right
 * when it read what the hand reading read; the share decided and the precision are computed here
 * from those two files, not written down.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { describe, expect, it } from 'vitest';
import {
  fastGrade,
  optionsInQuestion,
  type QuestionType,
  withinTolerance,
} from '../../../shared/families/qa/fast-path.js';

const FIXTURES = join(import.meta.dirname, '../../fixtures/qa');
const rows = (file: string): Record<string, string>[] =>
  parse(readFileSync(join(FIXTURES, file), 'utf8'), { columns: true });

const answers = rows('study-results.csv');
const handRead = new Map(
  rows('study-hand-checked.csv').map((r) => [`${r.config}/${r.question_id}`, r.answer_says!]),
);

/** Whether the fast path's reading is the hand reading: the same option, or the same number (±0.5%). */
function sameReading(type: QuestionType, extracted: string, hand: string): boolean {
  if (hand === '') return false;
  if (type === 'mcq') return extracted === hand;
  const value = Number.parseFloat(extracted);
  return Math.abs(value - Number(hand)) <= 0.005 * Math.max(1e-9, Math.abs(Number(hand)));
}

/** The key-based truth: the hand reading is the key (the option, or the number within 5%). */
function handCorrect(type: QuestionType, hand: string, key: string): boolean {
  if (hand === '') return false;
  return type === 'mcq' ? hand === key.trim() : withinTolerance(Number(hand), Number(key));
}

function measure() {
  const verdicts = answers.map((row) => {
    const type = row.type as QuestionType;
    const hand = handRead.get(`${row.config}/${row.question_id}`);
    if (hand === undefined) throw new Error(`no hand reading for ${row.config}/${row.question_id}`);
    const fast = fastGrade(type, row.predicted!, row.correct!, { options: optionsInQuestion(row.question!) });
    return { row, type, hand, fast };
  });
  const decided = verdicts.filter((v) => v.fast.decided);
  // Right: the fast verdict is the key-based truth (the hand reading graded against the key).
  const right = decided.filter(
    (v) => v.fast.decided && v.fast.correct === handCorrect(v.type, v.hand, v.row.correct!),
  );
  // Stricter: the fast path read what the hand reading read.
  const sameRead = decided.filter((v) => v.fast.decided && sameReading(v.type, v.fast.extracted, v.hand));
  return { verdicts, decided, right, sameRead };
}

describe('the fast path on the study answers', () => {
  it('every MCQ and numeric answer has a hand reading', () => {
    expect(answers.length).toBe(140);
    expect(handRead.size).toBe(140);
  });

  it('decides at least 60% of them, at least 98% of those as the key-based truth has it', () => {
    const { verdicts, decided, right, sameRead } = measure();
    const share = decided.length / verdicts.length;
    const precision = right.length / decided.length;
    const wrong = decided
      .filter((v) => !sameRead.includes(v))
      .map(
        (v) =>
          `${v.row.config}/${v.row.question_id}: ${v.fast.decided && v.fast.extracted} vs ${JSON.stringify(v.hand)}`,
      );
    console.log(
      `decided ${decided.length}/${verdicts.length} (${(share * 100).toFixed(1)}%), right ${right.length}/${decided.length} (${(precision * 100).toFixed(1)}%), read as by hand ${sameRead.length}`,
      wrong,
    );
    expect(share).toBeGreaterThanOrEqual(0.6);
    expect(precision).toBeGreaterThanOrEqual(0.98);
    // The two read otherwise are a hint's formula (`F_c = mv^2/r` read as 2) and a garbled
    // LaTeX line: graded wrong either way, as the hand reading grades them.
    expect(sameRead.length / decided.length).toBeGreaterThanOrEqual(0.98);
  });
});
