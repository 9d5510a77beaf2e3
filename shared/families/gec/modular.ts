import type { Parsed } from '../../family/answer.js';
import { type Asked, ask, baseRequest, failedSolve } from '../../family/ask.js';
import type { Solved } from '../../family/types.js';
import type { LlmProvider } from '../../model/provider.js';
import { type GecCase, render } from './case.js';
import { FUSION_INPUTS, fuse, type SubScores } from './fusion.js';
import type { GecLabel } from './labels.js';
import type { GecOutput } from './output.js';
import { parsePairCorrectness, parseScore } from './parsers.js';
import { gecHint, type SubJudge } from './simulate.js';
import type { ModularOptions } from './suite.js';

interface SubJudgeSpec {
  /** Prompt role (and cost stage). */
  role: SubJudge;
  format: string;
  parse(text: string): Parsed<Partial<SubScores> & { reason: string }>;
}

const score =
  (
    key: 'SCORE' | 'SEVERITY' | 'IMPROVEMENT',
    min: number,
    max: number,
    field: 'nonsense' | 'meaning' | 'quality',
  ) =>
  (text: string): Parsed<Partial<SubScores> & { reason: string }> => {
    const parsed = parseScore(text, key, min, max);
    return parsed.ok
      ? { ok: true, value: { [field]: parsed.value.value, reason: parsed.value.reason } }
      : parsed;
  };

/** The AQUA project's sub-judges: each its own prompt file and answer format. */
export const SUB_JUDGES: Record<SubJudge, SubJudgeSpec> = {
  nonsense: {
    role: 'nonsense',
    format: 'SCORE: <integer from -1 to 3>\nREASON: <brief explanation>',
    parse: score('SCORE', -1, 3, 'nonsense'),
  },
  meaning: {
    role: 'meaning',
    format: 'SEVERITY: <integer from 0 to 4>\nREASONING: <brief explanation>',
    parse: score('SEVERITY', 0, 4, 'meaning'),
  },
  quality: {
    role: 'quality',
    format: 'IMPROVEMENT: <integer from -3 to +3>\nREASONING: <brief explanation>',
    parse: score('IMPROVEMENT', -3, 3, 'quality'),
  },
  pair: {
    role: 'pair',
    format: 'SOURCE_CORRECT: <yes|no>\nTARGET_CORRECT: <yes|no>\nREASON: <brief explanation>',
    parse(text) {
      const parsed = parsePairCorrectness(text);
      return parsed.ok ? { ok: true, value: parsed.value } : parsed;
    },
  },
};

const SUB_JUDGE_OF: Record<keyof SubScores, SubJudge> = {
  nonsense: 'nonsense',
  meaning: 'meaning',
  quality: 'quality',
  sourceCorrect: 'pair',
  targetCorrect: 'pair',
};

/**
 * The sub-judges a modular suite runs: those its fusion reads, plus pair correctness for the
 * edit judge, which answers TN/FN from it when the pair has no edit.
 */
export function modularSubJudges(judge: 'edit' | 'feedback', options: ModularOptions): SubJudge[] {
  const needed = new Set(FUSION_INPUTS[options.fusion].map((input) => SUB_JUDGE_OF[input]));
  if (judge === 'edit') needed.add('pair');
  return (Object.keys(SUB_JUDGES) as SubJudge[]).filter((j) => needed.has(j));
}

/** Asks one sub-judge; `vars` overrides the item's text (the agent's tools pass their own). */
export function askSubJudge(
  c: GecCase,
  judge: SubJudge,
  stage: string,
  provider: LlmProvider,
  vars: Record<string, string> = {},
): Promise<Asked<Partial<SubScores> & { reason: string }>> {
  const spec = SUB_JUDGES[judge];
  return ask(
    c.ctx,
    stage,
    provider,
    {
      ...baseRequest(c.ctx, provider, render(c, spec.role, vars)),
      simulation: gecHint(c, provider, { answer: 'subjudge', judge }),
    },
    spec.parse,
    (problem) => render(c, 'reformat', { problem, format: spec.format }),
  );
}

/**
 * The modular method: sub-judges run concurrently, a deterministic fusion names the label.
 * Every sub-score (and its reason) stays in the result, so a report can re-fuse offline.
 */
export async function judgeModular(c: GecCase, options: ModularOptions): Promise<Solved<GecOutput>> {
  const provider = c.ctx.backends[0]!;
  const noEdit = c.spans.length === 0 && c.ctx.suite.judge === 'edit';
  const judges = noEdit ? (['pair'] as SubJudge[]) : modularSubJudges(c.ctx.suite.judge, options);
  const answers = await Promise.all(judges.map((judge) => askSubJudge(c, judge, judge, provider)));

  const scores: SubScores = {};
  const reasons: Record<string, string> = {};
  answers.forEach((answer, i) => {
    if (!answer.ok) return;
    const { reason, ...values } = answer.value;
    Object.assign(scores, values);
    reasons[judges[i]!] = reason;
  });
  const details = { fusion: options.fusion, scores, reasons };
  const failed = answers.find((a) => !a.ok);
  if (failed && !failed.ok) return failedSolve(failed, details);

  const fused: { label: GecLabel; rule: string } = noEdit
    ? scores.sourceCorrect
      ? { label: 'TN', rule: 'no edit ∧ source correct → TN' }
      : { label: 'FN', rule: 'no edit ∧ source incorrect → FN' }
    : fuse(options.fusion, scores);
  // The rule that fired, then what each sub-judge said: a reason a person can check.
  const said = judges.map((judge) => `${judge}: ${reasons[judge] || '(no reason)'}`);
  return {
    ok: true,
    output: { label: fused.label, reason: [fused.rule, ...said].join('; '), decidedBy: fused.rule },
    details: { ...details, rule: fused.rule },
  };
}
