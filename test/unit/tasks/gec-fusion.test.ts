import { describe, expect, it } from 'vitest';
import {
  FUSION_INPUTS,
  FUSION_RULES,
  FUSIONS,
  type Fused,
  type Fusion,
  fuse,
  type SubScores,
} from '../../../shared/families/gec/fusion.js';

type Case = [name: string, scores: SubScores, expected: Fused];

const CASCADE_RULE = {
  nonsense: 'nonsense ≥ 2 → FP1',
  meaning: 'meaning ≥ 2 → FP1',
  worse: 'quality < 0 → FP2',
  flat: '0 ≤ quality < 1 → FP3',
  better: 'quality ≥ 1 → TP',
} as const;

const TP_FP3_RULE = {
  meaning: 'meaning ≥ 3 → FP1',
  broken: '¬targetCorrect ∧ quality ≤ 0 → FP2',
  preferential: 'sourceCorrect ∧ targetCorrect ∧ meaning ≤ 1 ∧ quality ∈ {0,1} → FP3',
  fixes: 'targetCorrect ∧ meaning ≤ 1 ∧ quality ≥ 1 → TP',
  otherwise: 'otherwise → FP3',
} as const;

describe('fuse: cascade (the AQUA backbone prompts)', () => {
  const cases: Case[] = [
    // nonsense ≥ 2 → FP1
    [
      'nonsense exactly 2 → FP1',
      { nonsense: 2, meaning: 0, quality: 3 },
      { label: 'FP1', rule: CASCADE_RULE.nonsense },
    ],
    [
      'nonsense 3 → FP1',
      { nonsense: 3, meaning: 0, quality: 2 },
      { label: 'FP1', rule: CASCADE_RULE.nonsense },
    ],
    // meaning ≥ 2 → FP1
    [
      'nonsense 1 (just below) falls through; meaning exactly 2 → FP1',
      { nonsense: 1, meaning: 2, quality: 3 },
      { label: 'FP1', rule: CASCADE_RULE.meaning },
    ],
    [
      'meaning 4 → FP1',
      { nonsense: -1, meaning: 4, quality: 1 },
      { label: 'FP1', rule: CASCADE_RULE.meaning },
    ],
    // quality < 0 → FP2
    [
      'meaning 1 (just below) falls through; quality -1 → FP2',
      { nonsense: 1, meaning: 1, quality: -1 },
      { label: 'FP2', rule: CASCADE_RULE.worse },
    ],
    [
      'quality -3 → FP2',
      { nonsense: 0, meaning: 0, quality: -3 },
      { label: 'FP2', rule: CASCADE_RULE.worse },
    ],
    [
      'fractional quality -0.5 → FP2',
      { nonsense: 0, meaning: 0, quality: -0.5 },
      { label: 'FP2', rule: CASCADE_RULE.worse },
    ],
    // 0 ≤ quality < 1 → FP3
    [
      'quality exactly 0 → FP3',
      { nonsense: 0, meaning: 0, quality: 0 },
      { label: 'FP3', rule: CASCADE_RULE.flat },
    ],
    [
      'fractional quality 0.5 → FP3',
      { nonsense: 0, meaning: 1, quality: 0.5 },
      { label: 'FP3', rule: CASCADE_RULE.flat },
    ],
    // else TP
    [
      'quality exactly 1 → TP',
      { nonsense: 0, meaning: 0, quality: 1 },
      { label: 'TP', rule: CASCADE_RULE.better },
    ],
    [
      'nonsense -1 (clearer), meaning 1, quality 3 → TP',
      { nonsense: -1, meaning: 1, quality: 3 },
      { label: 'TP', rule: CASCADE_RULE.better },
    ],
  ];

  it.each(cases)('%s', (_name, scores, expected) => {
    expect(fuse('cascade', scores)).toEqual(expected);
  });

  it.each<Case>([
    [
      'nonsense, meaning and quality rules all hold → nonsense wins',
      { nonsense: 3, meaning: 4, quality: -3 },
      { label: 'FP1', rule: CASCADE_RULE.nonsense },
    ],
    [
      'meaning and quality < 0 both hold → meaning wins',
      { nonsense: 0, meaning: 2, quality: -2 },
      { label: 'FP1', rule: CASCADE_RULE.meaning },
    ],
    [
      'meaning ≥ 2 beats a would-be FP3 quality',
      { nonsense: 0, meaning: 3, quality: 0 },
      { label: 'FP1', rule: CASCADE_RULE.meaning },
    ],
  ])('precedence: %s', (_name, scores, expected) => {
    expect(fuse('cascade', scores)).toEqual(expected);
  });

  it('ignores the pair-correctness sub-scores it does not use', () => {
    const scores = { nonsense: 0, meaning: 0, quality: 2 };
    expect(fuse('cascade', { ...scores, sourceCorrect: false, targetCorrect: false })).toEqual(
      fuse('cascade', scores),
    );
  });
});

describe('fuse: tp_fp3 (the AQUA feedback judges)', () => {
  const cases: Case[] = [
    // meaning ≥ 3 → FP1
    [
      'meaning exactly 3 → FP1, even with a correct target and reward 3',
      { meaning: 3, quality: 3, sourceCorrect: false, targetCorrect: true },
      { label: 'FP1', rule: TP_FP3_RULE.meaning },
    ],
    [
      'meaning 4 → FP1',
      { meaning: 4, quality: 0, sourceCorrect: true, targetCorrect: true },
      { label: 'FP1', rule: TP_FP3_RULE.meaning },
    ],
    // ¬targetCorrect ∧ reward ≤ 0 → FP2
    [
      'meaning exactly 2 falls through; target incorrect, reward exactly 0 → FP2',
      { meaning: 2, quality: 0, sourceCorrect: false, targetCorrect: false },
      { label: 'FP2', rule: TP_FP3_RULE.broken },
    ],
    [
      'target incorrect, reward -2 → FP2',
      { meaning: 0, quality: -2, sourceCorrect: true, targetCorrect: false },
      { label: 'FP2', rule: TP_FP3_RULE.broken },
    ],
    // sourceCorrect ∧ targetCorrect ∧ meaning ≤ 1 ∧ reward ∈ {0,1} → FP3
    [
      'both correct, meaning 0, reward exactly 0 → FP3',
      { meaning: 0, quality: 0, sourceCorrect: true, targetCorrect: true },
      { label: 'FP3', rule: TP_FP3_RULE.preferential },
    ],
    [
      'both correct, meaning exactly 1, reward exactly 1 → FP3, not TP',
      { meaning: 1, quality: 1, sourceCorrect: true, targetCorrect: true },
      { label: 'FP3', rule: TP_FP3_RULE.preferential },
    ],
    // targetCorrect ∧ meaning ≤ 1 ∧ reward ≥ 1 → TP
    [
      'source incorrect, target correct, meaning 0, reward exactly 1 → TP',
      { meaning: 0, quality: 1, sourceCorrect: false, targetCorrect: true },
      { label: 'TP', rule: TP_FP3_RULE.fixes },
    ],
    [
      'source incorrect, target correct, meaning exactly 1, reward 3 → TP',
      { meaning: 1, quality: 3, sourceCorrect: false, targetCorrect: true },
      { label: 'TP', rule: TP_FP3_RULE.fixes },
    ],
    [
      'both correct but reward 2 (not in {0,1}) → TP',
      { meaning: 0, quality: 2, sourceCorrect: true, targetCorrect: true },
      { label: 'TP', rule: TP_FP3_RULE.fixes },
    ],
    // otherwise → FP3
    [
      'target incorrect with reward 2 → otherwise FP3',
      { meaning: 0, quality: 2, sourceCorrect: false, targetCorrect: false },
      { label: 'FP3', rule: TP_FP3_RULE.otherwise },
    ],
    [
      'target incorrect with reward exactly 1 (just above FP2) → otherwise FP3',
      { meaning: 1, quality: 1, sourceCorrect: true, targetCorrect: false },
      { label: 'FP3', rule: TP_FP3_RULE.otherwise },
    ],
    [
      'meaning 2 with a correct target and reward 2 → otherwise FP3',
      { meaning: 2, quality: 2, sourceCorrect: false, targetCorrect: true },
      { label: 'FP3', rule: TP_FP3_RULE.otherwise },
    ],
    [
      'target correct, source incorrect, reward 0 → otherwise FP3',
      { meaning: 0, quality: 0, sourceCorrect: false, targetCorrect: true },
      { label: 'FP3', rule: TP_FP3_RULE.otherwise },
    ],
    [
      'target correct but reward -1 → otherwise FP3 (FP2 needs an incorrect target)',
      { meaning: 0, quality: -1, sourceCorrect: true, targetCorrect: true },
      { label: 'FP3', rule: TP_FP3_RULE.otherwise },
    ],
    [
      'both correct, fractional reward 0.5 (not in {0,1}, below 1) → otherwise FP3',
      { meaning: 0, quality: 0.5, sourceCorrect: true, targetCorrect: true },
      { label: 'FP3', rule: TP_FP3_RULE.otherwise },
    ],
  ];

  it.each(cases)('%s', (_name, scores, expected) => {
    expect(fuse('tp_fp3', scores)).toEqual(expected);
  });

  it.each<Case>([
    [
      'meaning ≥ 3 and ¬targetCorrect ∧ reward ≤ 0 both hold → meaning wins',
      { meaning: 4, quality: -3, sourceCorrect: false, targetCorrect: false },
      { label: 'FP1', rule: TP_FP3_RULE.meaning },
    ],
    [
      'meaning ≥ 3 and the FP3 rule both hold → meaning wins',
      { meaning: 3, quality: 1, sourceCorrect: true, targetCorrect: true },
      { label: 'FP1', rule: TP_FP3_RULE.meaning },
    ],
    [
      'the FP3 rule and the TP rule both hold (reward 1) → FP3 wins',
      { meaning: 0, quality: 1, sourceCorrect: true, targetCorrect: true },
      { label: 'FP3', rule: TP_FP3_RULE.preferential },
    ],
  ])('precedence: %s', (_name, scores, expected) => {
    expect(fuse('tp_fp3', scores)).toEqual(expected);
  });

  it('ignores the nonsense sub-score it does not use', () => {
    const scores = { meaning: 0, quality: 2, sourceCorrect: false, targetCorrect: true };
    expect(fuse('tp_fp3', { ...scores, nonsense: 3 })).toEqual(fuse('tp_fp3', scores));
  });
});

describe('fuse: inputs', () => {
  const full: Required<SubScores> = {
    nonsense: 0,
    meaning: 0,
    quality: 1,
    sourceCorrect: false,
    targetCorrect: true,
  };

  it('lists the sub-judges each rule set needs', () => {
    expect(FUSION_INPUTS).toEqual({
      cascade: ['nonsense', 'meaning', 'quality'],
      tp_fp3: ['meaning', 'quality', 'sourceCorrect', 'targetCorrect'],
    });
    expect(Object.keys(FUSION_RULES).sort()).toEqual([...FUSIONS].sort());
  });

  const missing = FUSIONS.flatMap((fusion) =>
    FUSION_INPUTS[fusion].map((input) => [fusion, input] as [Fusion, keyof SubScores]),
  );
  it.each(missing)('%s throws naming the missing %s sub-score', (fusion, input) => {
    const scores: SubScores = { ...full };
    delete scores[input];
    expect(() => fuse(fusion, scores)).toThrow(new RegExp(`'${input}'.*missing`));
    expect(() => fuse(fusion, { ...full, [input]: undefined })).toThrow(`'${input}'`);
  });

  it('throws on a NaN score rather than letting it fall through every comparison', () => {
    expect(() => fuse('cascade', { ...full, quality: Number.NaN })).toThrow(/'quality'.*not a number/);
  });

  it('throws on an unknown rule set', () => {
    expect(() => fuse('majority' as Fusion, full)).toThrow(/unknown fusion 'majority'/);
  });

  it.each(FUSIONS)('%s: every rule names the label it gives, and the last always holds', (fusion) => {
    const rules = FUSION_RULES[fusion];
    for (const r of rules) expect(r.rule.endsWith(`→ ${r.label}`)).toBe(true);
    expect(rules.at(-1)!.when({ ...full, quality: Number.NaN })).toBe(true);
  });
});
