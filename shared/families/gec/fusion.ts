/**
 * The modular method's deterministic fusion: sub-judge scores in, one label out. Two
 * rule sets, selectable by name; each is an ordered list of rules and the first rule that holds
 * decides. Pure: no I/O, no model calls.
 *
 * - `cascade` (the AQUA project's "Modular Decision Logic"): nonsense, meaning change, quality.
 * - `tp_fp3` (the escalation study's feedback/modular judge): meaning change, reward, pair
 *   correctness. Its "reward" is the quality sub-judge's IMPROVEMENT score, so it is read from
 *   `quality`.
 */

export const FUSIONS = ['cascade', 'tp_fp3'] as const;
export type Fusion = (typeof FUSIONS)[number];

export interface SubScores {
  /** Nonsense detector, `SCORE: -1..3`. */
  nonsense?: number;
  /** Meaning-change severity, `SEVERITY: 0..4`. */
  meaning?: number;
  /** Quality / reward, `IMPROVEMENT: -3..+3`. */
  quality?: number;
  /** Pair correctness: the source sentence is already correct. */
  sourceCorrect?: boolean;
  /** Pair correctness: the suggested sentence is correct. */
  targetCorrect?: boolean;
}

/** Sub-judges each rule set needs. */
export const FUSION_INPUTS: Record<Fusion, readonly (keyof SubScores)[]> = {
  cascade: ['nonsense', 'meaning', 'quality'],
  tp_fp3: ['meaning', 'quality', 'sourceCorrect', 'targetCorrect'],
};

export type FusedLabel = 'TP' | 'FP1' | 'FP2' | 'FP3';

export interface Fused {
  label: FusedLabel;
  /** The rule that fired, human readable, e.g. `meaning ≥ 3 → FP1`. */
  rule: string;
}

/** Sub-scores with every input a rule set needs present (checked by `fuse` before any rule runs). */
type Complete = Required<SubScores>;

export interface FusionRule {
  /** Human-readable rule, ending in `→ LABEL`. */
  rule: string;
  label: FusedLabel;
  when: (s: Complete) => boolean;
}

/** Each rule set in order; the last rule of each always holds. */
export const FUSION_RULES: Record<Fusion, readonly FusionRule[]> = {
  cascade: [
    { rule: 'nonsense ≥ 2 → FP1', label: 'FP1', when: (s) => s.nonsense >= 2 },
    { rule: 'meaning ≥ 2 → FP1', label: 'FP1', when: (s) => s.meaning >= 2 },
    { rule: 'quality < 0 → FP2', label: 'FP2', when: (s) => s.quality < 0 },
    { rule: '0 ≤ quality < 1 → FP3', label: 'FP3', when: (s) => s.quality >= 0 && s.quality < 1 },
    // What is left is quality ≥ 1 (inputs are checked to be numbers, so never NaN).
    { rule: 'quality ≥ 1 → TP', label: 'TP', when: () => true },
  ],
  tp_fp3: [
    { rule: 'meaning ≥ 3 → FP1', label: 'FP1', when: (s) => s.meaning >= 3 },
    {
      rule: '¬targetCorrect ∧ quality ≤ 0 → FP2',
      label: 'FP2',
      when: (s) => !s.targetCorrect && s.quality <= 0,
    },
    {
      // The seed's "reward ∈ {0,1}": exactly 0 or 1, so a fractional score (an averaged 0.5) does not match.
      rule: 'sourceCorrect ∧ targetCorrect ∧ meaning ≤ 1 ∧ quality ∈ {0,1} → FP3',
      label: 'FP3',
      when: (s) =>
        s.sourceCorrect && s.targetCorrect && s.meaning <= 1 && (s.quality === 0 || s.quality === 1),
    },
    {
      rule: 'targetCorrect ∧ meaning ≤ 1 ∧ quality ≥ 1 → TP',
      label: 'TP',
      when: (s) => s.targetCorrect && s.meaning <= 1 && s.quality >= 1,
    },
    { rule: 'otherwise → FP3', label: 'FP3', when: () => true },
  ],
};

/** Throws an Error naming the missing sub-score if an input the rule set needs is undefined. */
export function fuse(fusion: Fusion, scores: SubScores): Fused {
  const rules = FUSION_RULES[fusion];
  if (!rules) throw new Error(`unknown fusion '${String(fusion)}' (expected one of: ${FUSIONS.join(', ')})`);
  for (const input of FUSION_INPUTS[fusion]) {
    const value = scores[input];
    if (value === undefined) {
      throw new Error(`fusion '${fusion}' needs the '${input}' sub-score, which is missing`);
    }
    if (typeof value === 'number' && Number.isNaN(value)) {
      throw new Error(`fusion '${fusion}' needs the '${input}' sub-score, which is not a number`);
    }
  }
  // Every input this rule set reads is checked above; the placeholders stand in for inputs it never reads.
  const complete: Complete = {
    nonsense: Number.NaN,
    meaning: Number.NaN,
    quality: Number.NaN,
    sourceCorrect: false,
    targetCorrect: false,
    ...scores,
  };
  const fired = rules.find((r) => r.when(complete))!;
  return { label: fired.label, rule: fired.rule };
}
