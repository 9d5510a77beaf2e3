/**
 * The QA fast path on nasty answers: it decides only what is unambiguous and leaves the rest
 * to the LLM grader (undecided, with the reason).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  fastGrade,
  finalNumber,
  optionsInQuestion,
  type QuestionType,
  selectedOption,
  withinTolerance,
} from '../../../shared/families/qa/fast-path.js';
import { EXAMPLE_DATA } from '../../helpers.js';

const OPTIONS = { A: 'Velocity', B: 'Acceleration', C: 'Displacement', D: 'Jerk' };
const option = (answer: string) => selectedOption(answer, OPTIONS);
const number = (answer: string) => finalNumber(answer);

describe('selectedOption', () => {
  it.each([
    ['The slope of a velocity-time graph represents: (B) Acceleration', 'B', 'letter'],
    ['B', 'B', 'letter'],
    ['(C)', 'C', 'letter'],
    ['B.', 'B', 'letter'],
    ['Answer: B', 'B', 'letter'],
    ['The answer is **C**.', 'C', 'letter'],
    ['{"answer": "B"}', 'B', 'json'],
    ['```json\n{"answer": "(D)"}\n```', 'D', 'json'],
    // "A" before a lower-case word is the article, not option A.
    ['A ball rolling down a slope speeds up, so (B).', 'B', 'letter'],
    ['A. Velocity', 'A', 'letter'],
    // No letter: the option's text, when it alone is stated.
    ['Acceleration', 'B', 'option-text'],
    ['It is the jerk of the motion.', 'D', 'option-text'],
  ])('decides %j as %s', (answer, letter, how) => {
    expect(option(answer)).toEqual({ decided: true, value: letter, how });
  });

  it.each([
    ['B or C', /B, C/],
    ['Option B is wrong; C is right.', /option B marked, but C also named/],
    ['(A) Velocity (B) Acceleration (C) Displacement (D) Jerk', /several options listed: A, B, C, D/],
    [
      'The slope of a velocity-time graph represents:\n(A) Velocity\n(B) Acceleration\n(C) Displacement\n(D) Jerk\nAnswer: B',
      /several options listed/,
    ],
    ['(A) or (B), depending on the frame', /several options marked: A, B/],
    ['It represents acceleration, the rate of change of velocity.', /the text of several options: A, B/],
    ['{"reasoning": "slope is dv/dt"}', /JSON answer without an option letter/],
    ['I am not sure.', /no option letter or option text/],
    ['', /no answer/],
  ])('leaves %j to the LLM grader', (answer, reason) => {
    const verdict = option(answer);
    expect(verdict.decided).toBe(false);
    expect(!verdict.decided && verdict.reason).toMatch(reason);
  });
});

describe('finalNumber', () => {
  it.each([
    // The unit's exponent is not the answer: 4, not 2.
    ['a = Δv/Δt = 8/2 = 4 m/s^2', 4, 'm/s^2', 'final-number'],
    ['4 m/s^2', 4, 'm/s^2', 'only-number'],
    ['F = ma = 2 kg × 3 m/s^2 = 6 N', 6, 'N', 'final-number'],
    ['2.5 × 10^3 J', 2500, 'J', 'only-number'],
    ['2.5 \\times 10^{3}', 2500, undefined, 'only-number'],
    ['1,000 N', 1000, 'N', 'only-number'],
    ['-3.2e-4 C', -0.00032, 'C', 'only-number'],
    ['−7.5 m', -7.5, 'm', 'only-number'],
    ['$4.8\\mathrm{~km}$', 4.8, 'km', 'only-number'],
    ['about 9.8 m s^-2', 9.8, 'm s^-2', 'only-number'],
    ['The speed is 20 m/s', 20, 'm/s', 'only-number'],
    ['E = 5 J, so the answer is 5 J.', 5, 'J', 'answer-marker'],
    ['Answer: 42.', 42, undefined, 'answer-marker'],
    ['{"impulse": 5}', 5, undefined, 'json'],
    ['{"answer": "12.5 N", "work": "F = 2.5 × 5"}', 12.5, 'N', 'json'],
  ])('reads %j as %s', (answer, value, unit, how) => {
    const verdict = number(answer);
    expect(verdict).toEqual({ decided: true, value: unit === undefined ? { value } : { value, unit }, how });
  });

  it.each([
    ['The answer is 12 and 13', /competing numbers: 12, 13/],
    ['v = 3 m/s and t = 2 s', /competing numbers: 3, 2/],
    ['x = 3, y = 4', /competing numbers: 3, 4/],
    ['Between 3 and 5 m', /competing numbers: 3, 5/],
    ['no idea', /no number/],
    ['{"impulse": 5, "force": 10}', /several numbers/],
    ['', /no answer/],
  ])('leaves %j to the LLM grader', (answer, reason) => {
    const verdict = number(answer);
    expect(verdict.decided).toBe(false);
    expect(!verdict.decided && verdict.reason).toMatch(reason);
  });
});

describe('withinTolerance', () => {
  it('is relative to the key (5% by default), absolute around 0', () => {
    expect(withinTolerance(4.19, 4)).toBe(true); // 4.75 %
    expect(withinTolerance(4.21, 4)).toBe(false); // 5.25 %
    expect(withinTolerance(-3.9, -4)).toBe(true);
    expect(withinTolerance(3.9, -4)).toBe(false);
    expect(withinTolerance(0.04, 0)).toBe(true);
    expect(withinTolerance(4.3, 4, 0.1)).toBe(true);
  });
});

describe('optionsInQuestion', () => {
  it('reads options listed inline, in letter order', () => {
    expect(optionsInQuestion('Which is an SI base unit? (A) Newton (B) Joule (C) Kilogram (D) Watt')).toEqual(
      {
        A: 'Newton',
        B: 'Joule',
        C: 'Kilogram',
        D: 'Watt',
      },
    );
    expect(optionsInQuestion('What does (B) mean here?')).toEqual({});
    expect(optionsInQuestion('Pick (B) Joule or (A) Newton')).toEqual({});
  });
});

describe('fastGrade on the physics QA study questions', () => {
  const questions = readFileSync(join(EXAMPLE_DATA, 'physics_questions_50.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as { id: number; type: QuestionType; question: string; answer: string });

  it("has the study's 19 mcq, 16 numeric and 15 explanation questions", () => {
    const count = (type: string) => questions.filter((q) => q.type === type).length;
    expect([count('mcq'), count('numeric'), count('explanation')]).toEqual([19, 16, 15]);
  });

  it("decides the answers the study's LLM grader scored 0 although they were right", () => {
    const slope = questions.find((q) => q.id === 10)!;
    expect(
      fastGrade('mcq', 'The slope of a velocity-time graph represents: (B) Acceleration', slope.answer, {
        question: slope.question,
      }),
    ).toEqual({
      decided: true,
      correct: true,
      extracted: 'B',
      decidedBy: 'fast:letter',
    });
    const acceleration = questions.find((q) => q.id === 5)!;
    expect(fastGrade('numeric', 'a = (20 - 0) / 5 = 4 m/s^2', acceleration.answer)).toEqual({
      decided: true,
      correct: true,
      extracted: '4 m/s^2',
      decidedBy: 'fast:final-number',
    });
  });

  it('grades every key, written as a model would, right; and a wrong option or number wrong', () => {
    for (const q of questions) {
      if (q.type === 'mcq') {
        const options = optionsInQuestion(q.question);
        expect(Object.keys(options).length, `question ${q.id}`).toBeGreaterThanOrEqual(4);
        const wrong = Object.keys(options).find((l) => l !== q.answer)!;
        for (const answer of [`(${q.answer})`, `Answer: ${q.answer}`, `${q.answer}. ${options[q.answer]}`]) {
          expect(fastGrade('mcq', answer, q.answer, { options }), `${q.id}: ${answer}`).toMatchObject({
            decided: true,
            correct: true,
          });
        }
        expect(fastGrade('mcq', `(${wrong})`, q.answer, { options })).toMatchObject({
          decided: true,
          correct: false,
        });
      } else if (q.type === 'numeric') {
        const key = Number(q.answer);
        expect(
          fastGrade('numeric', `The answer is ${q.answer}.`, q.answer),
          `question ${q.id}`,
        ).toMatchObject({ decided: true, correct: true });
        expect(fastGrade('numeric', `= ${key * 1.04}`, q.answer)).toMatchObject({
          decided: true,
          correct: true,
        });
        expect(fastGrade('numeric', `= ${key * 1.2}`, q.answer)).toMatchObject({
          decided: true,
          correct: false,
        });
      } else {
        expect(fastGrade('explanation', q.answer, q.answer)).toEqual({
          decided: false,
          reason: 'explanations are graded by the LLM',
        });
      }
    }
  });

  it("leaves a unit other than the key's to the LLM grader", () => {
    expect(fastGrade('numeric', '4.8 km', '4.8', { keyUnit: ' m' })).toEqual({
      decided: false,
      reason: 'unit km where the key is in m',
    });
    expect(fastGrade('numeric', '$4.8\\mathrm{~km}$', '4.8', { keyUnit: 'km' })).toMatchObject({
      decided: true,
      correct: true,
    });
    expect(fastGrade('numeric', '4.8', '4.8', { keyUnit: 'km' })).toMatchObject({
      decided: true,
      correct: true,
    });
  });
});

describe('fastGrade with SciBench units', () => {
  it('reads the LaTeX unit, and its scale', () => {
    expect(
      fastGrade('numeric', '83.8 m/s^2', '83.81', { keyUnit: ' $\\mathrm{m} / \\mathrm{s}^2$' }),
    ).toMatchObject({
      decided: true,
      correct: true,
    });
    expect(
      fastGrade('numeric', '-131 kJ mol^-1', '-131.1', { keyUnit: ' $\\mathrm{~kJ} \\mathrm{~mol}^{-1}$' }),
    ).toMatchObject({
      decided: true,
      correct: true,
    });
    // 2 in units of 10^6 m.
    expect(fastGrade('numeric', '2.0 × 10^6 m', '2', { keyUnit: ' $10^6$ m' })).toMatchObject({
      decided: true,
      correct: true,
    });
    expect(fastGrade('numeric', '2.0 m', '2', { keyUnit: ' $10^6$ m' })).toMatchObject({
      decided: true,
      correct: false,
    });
    expect(fastGrade('numeric', '2', '2', { keyUnit: ' $10^6$ m' })).toEqual({
      decided: false,
      reason: 'a number without its unit where the key is in 10^6 m',
    });
  });
});

describe('an answer that opens with its option and that option’s text', () => {
  const TORQUE = {
    A: 'Net force is zero',
    B: 'Net torque is zero',
    C: 'Kinetic energy is constant',
    D: 'Velocity is constant',
  };
  const ROTATION = { A: 'Mass', B: 'Torque', C: 'Moment of Inertia', D: 'Anger' };
  const SI = { A: 'Newton', B: 'Joule', C: 'Kilogram', D: 'Watt' };

  it.each([
    [
      'Answer: (B) Net torque is zero.\n\nAngular momentum is conserved when the net torque is zero. Therefore, options (C) and (D) are incorrect. Option (A) is incorrect because a net force can exist without a torque.',
      TORQUE,
      'B',
    ],
    [
      '[C] Moment of Inertia\n\nExplanation:\nMass alone (Option A) does not describe it; Torque (Option B) causes rotation. Anger (Option D) is not a physical quantity.',
      ROTATION,
      'C',
    ],
    [
      '(C) Kilogram is an SI base unit. The other units listed are derived units. A Newton (N) is a derived unit of force.',
      SI,
      'C',
    ],
    ['B) Net torque is zero, whatever the net force: options C and D describe other cases.', TORQUE, 'B'],
    ['The correct answer is: C. Moment of Inertia — mass (A) alone is not enough.', ROTATION, 'C'],
  ])('decides %j', (answer, options, letter) => {
    expect(selectedOption(answer, options)).toEqual({ decided: true, value: letter, how: 'leading-option' });
  });

  it('reads the options from the question when grading', () => {
    const question =
      'Angular momentum is conserved when: (A) Net force is zero (B) Net torque is zero (C) Kinetic energy is constant (D) Velocity is constant';
    expect(
      fastGrade('mcq', 'Answer: (B) Net torque is zero. Options (C) and (D) are incorrect.', 'B', {
        question,
      }),
    ).toEqual({ decided: true, correct: true, extracted: 'B', decidedBy: 'fast:leading-option' });
  });

  it.each([
    // Two options, each with its own text.
    ['(B) Net torque is zero and (A) Net force is zero, in a closed system.', TORQUE],
    ['(B) Net torque is zero. Some texts give (C) Kinetic energy is constant.', TORQUE],
    // Another option stated as the answer.
    ['(B) Net torque is zero. The answer is (C), options (A) and (D) aside.', TORQUE],
    // The letter's text is not what follows it: another option's, or none.
    ['(B) Net force is zero. Options (C) and (D) are incorrect.', TORQUE],
    ['(C) is the one. Options (A) and (B) are wrong.', ROTATION],
  ])('leaves %j to the LLM grader', (answer, options) => {
    expect(selectedOption(answer, options).decided).toBe(false);
  });

  it('without the options’ texts, counts only a bracketed letter or one after "Answer:"', () => {
    const letters = { A: '', B: '', C: '', D: '' };
    expect(selectedOption('[C] Moment of Inertia. Mass (Option A) is not it.', letters)).toEqual({
      decided: true,
      value: 'C',
      how: 'leading-option',
    });
    expect(selectedOption('C. Moment of inertia; mass (A) is not it.', letters).decided).toBe(false);
  });
});

describe('the answer field of a JSON answer, read as text', () => {
  const OPTIONS_3 = { A: 'First Law', B: 'Second Law', C: 'Third Law', D: 'Law of Gravitation' };
  it.each([
    ['{"Answer": "C) Third Law"}', 'C'],
    ['{"answer": "B. Second Law, since F = ma"}', 'B'],
    ['{"answer": "Recoil follows from the third law."}', 'C'],
  ])('decides %j', (answer, letter) => {
    expect(selectedOption(answer, OPTIONS_3)).toEqual({
      decided: true,
      value: letter,
      how: 'json-answer-text',
    });
  });

  it.each([
    ['{"answer": "The object has a constant (A) First Law and (C) Third Law."}'],
    ['{"answer": "None of the above: the first law and the second law both apply."}'],
    ['{"explanation": "The third law."}'],
  ])('leaves %j to the LLM grader', (answer) => {
    expect(selectedOption(answer, OPTIONS_3).decided).toBe(false);
  });
});

describe('the last sentence of a worked numeric answer', () => {
  it.each([
    [
      'Given:\nm = 5 kg\ng = 9.8 m/s^2\nh = 10 m\n\nPotential Energy = 5 kg * 9.8 m/s^2 * 10 m\nPotential Energy = 490 Joules',
      490,
      'Joules',
    ],
    [
      'Using a = Δv/Δt with v0 = 0 m/s and v = 20 m/s over 5 s, the car gains speed steadily. Its average acceleration is 4 m/s².',
      4,
      'm/s',
    ],
    ['T = 2 * 3.14 * 0.4332 s\nT ≈ 2.11 s\n\nSo, the period is approximately 2.11 seconds.', 2.11, 'seconds'],
    ['With c = λf, λ = 500 nm and f = 6 × 10^14 Hz. The speed of light is 3 × 10^8 m/s.', 3e8, 'm/s'],
    ['With c = λf, λ = 500 nm and f = 6e14 Hz. The speed of light is 3e8 m/s.', 3e8, 'm/s'],
    ['With c = λf, λ = 500 nm and f = 6.0 x 10^14 Hz. The speed of light is 3.0 x 10^8 m/s.', 3e8, 'm/s'],
    [
      'F = m v^2 / r, with m = 1000 kg, v = 10 m/s, r = 50 m.\nTherefore, the force required is 20,000 N.',
      20000,
      'N',
    ],
    ['J = F t with F = 50 N and t = 0.1 s.\nThe impulse is 5 N·s (5 kg·m/s).', 5, 'N·s'],
  ])('reads %j', (answer, value, unit) => {
    expect(number(answer)).toEqual({ decided: true, value: { value, unit }, how: 'last-sentence' });
  });

  it.each([
    // Several numbers in the last sentence.
    [
      'KE = 0.5 × 2 × 3^2\nKE = 9 J\n\nSo, the kinetic energy of the 2 kg object moving at 3 m/s is 9 Joules.',
    ],
    ['a = 20/5 m/s^2 and v = 20 m/s.\nSo a car at 72 km/h is at 20 m/s.'],
    // The last sentence states no result (no "is", "=").
    ['a = 20 / 5 = 4 m/s^2 and v = 20 m/s.\nNote the rounding to 2 figures.'],
    // A closing note or assumption is not the result.
    ['a = 20 / 5 = 4 m/s^2 and v = 20 m/s.\nNote: g = 9.8 m/s^2 is not needed here.'],
    ['F = 10 N and d = 5 m, so W = F d.\nAssuming the force is along the motion, cos θ = 1.'],
    // One sentence only: the competing numbers stand.
    ['The speed is 25 m/s over 100 m'],
  ])('leaves %j to the LLM grader', (answer) => {
    expect(number(answer).decided).toBe(false);
  });

  it('grades the number it reads against the key', () => {
    const answer =
      'h = 10 m, m = 5 kg, g = 9.8 m/s^2.\nSo, the potential energy relative to the ground is 490 J.';
    expect(fastGrade('numeric', answer, '490')).toEqual({
      decided: true,
      correct: true,
      extracted: '490 J',
      decidedBy: 'fast:last-sentence',
    });
    expect(fastGrade('numeric', answer.replace('490 J', '49 J'), '490')).toMatchObject({ correct: false });
  });
});
