/**
 * A check a grader model decides: the suite's grader prompt (columns and the output, each in a
 * tag section) asked of a backend, answered as a declared label, a number in a range, or — as
 * openai/evals' model-graded specs do — a choice named on the answer's last (or first) line.
 */
import { z } from 'zod';
import { parseAnswer } from '../../family/answer.js';
import { ask, baseRequest, modelOf } from '../../family/ask.js';
import type { TaskContext } from '../../family/types.js';
import { ASCII_PUNCTUATION } from '../../lib/metrics/answer-match.js';
import type { Failure } from '../../model/model.js';
import type { LlmProvider } from '../../model/provider.js';
import type { Verdict } from './deterministic.js';
import type { ChecksHint } from './simulate.js';
import type { ChecksSuite, GradedCheck } from './suite.js';

/** The choice an answer naming none of the choices is (openai/evals' `__invalid__`). */
export const INVALID_CHOICE = '__invalid__';

/** The grader of a check: the backend it names (by id or model), else the suite's last. */
export function graderOf(check: GradedCheck, backends: readonly LlmProvider[]): LlmProvider | undefined {
  if (check.backend === undefined) return backends.at(-1);
  return (
    backends.find((b) => b.id === check.backend) ??
    backends.find((b) => modelOf(b) === check.backend!.slice(check.backend!.indexOf(':') + 1))
  );
}

/**
 * The choice an answer gives, as openai/evals reads it: line by line — from the last line for
 * `cot_classify` (reasoning first, then the choice), from the first for `classify_cot` and
 * `classify` — each stripped of punctuation, the first line that starts or ends with a choice
 * giving it; none: {@link INVALID_CHOICE}.
 */
export function readChoice(
  text: string,
  evalType: GradedCheck['evalType'],
  choices: readonly string[],
): string {
  const lines = text.trim().split('\n');
  if (evalType === 'cot_classify') lines.reverse();
  for (const raw of lines) {
    const line = raw.trim().replace(ASCII_PUNCTUATION, '');
    if (!line) continue;
    for (const choice of choices) if (line.startsWith(choice) || line.endsWith(choice)) return choice;
  }
  return INVALID_CHOICE;
}

const answerSchemas = new WeakMap<
  GradedCheck,
  z.ZodType<{ label?: string; score?: number; reason: string }>
>();

function answerSchema(check: GradedCheck) {
  let schema = answerSchemas.get(check);
  if (!schema) {
    const reason = z.string().default('');
    const labels = check.labels;
    schema = labels
      ? z.object({
          label: z
            .string()
            .transform((v) => labels.find((l) => l.toLowerCase() === v.trim().toLowerCase()))
            .refine((v): v is string => v !== undefined, {
              message: `label must be one of ${labels.join(', ')}`,
            }),
          reason,
        })
      : z.object({ score: z.number().min(check.range![0]).max(check.range![1]), reason });
    answerSchemas.set(check, schema);
  }
  return schema;
}

/** What the check needs to ask its grader: its prompt role, and the item's original grade for the simulator. */
export interface GradedAsk {
  role: string;
  item: string;
  vars: Record<string, string>;
  /** The grade another tool gave (simulation only: the simulator agrees with it, with noise). */
  gold?: boolean;
}

/** A model check's verdict, or why there is none. */
export async function gradedVerdict(
  check: GradedCheck,
  question: GradedAsk,
  ctx: TaskContext<ChecksSuite>,
): Promise<Verdict | { failure: Failure }> {
  const grader = graderOf(check, ctx.backends);
  if (!grader) return { failure: { kind: 'provider', message: `no backend ${check.backend} to grade with` } };
  const hint: ChecksHint = {
    family: 'checks',
    stage: 'grade',
    item: question.item,
    ...(check.labels ? { labels: check.labels, passing: check.passing ?? [check.labels[0]!] } : {}),
    ...(check.range ? { range: check.range, threshold: check.threshold ?? check.range[1] } : {}),
    ...(check.choices
      ? { choices: check.choices, passing: passingChoices(check), evalType: check.evalType }
      : {}),
    ...(question.gold !== undefined ? { gold: question.gold !== check.not } : {}),
  };
  const prompt = ctx.render(question.role, question.vars);
  if (check.choices) {
    const completion = await ctx.call('grade', grader, {
      ...baseRequest(ctx, grader, prompt),
      simulation: hint,
    });
    const choice = readChoice(completion.text, check.evalType, check.choices);
    const score = choiceScore(check, choice);
    return turn(check, { pass: score >= (check.threshold ?? 1), score, reason: `chose ${choice}` });
  }
  const contract = check.labels
    ? ctx.render('contract.labels', {
        labels: check.labels.map((l) => JSON.stringify(l)).join(' | '),
        fields: '',
      })
    : ctx.render('contract.range', {
        min: String(check.range![0]),
        max: String(check.range![1]),
        fields: '',
      });
  const answer = await ask(
    ctx,
    'grade',
    grader,
    { ...baseRequest(ctx, grader, `${prompt}\n\n${contract}`), simulation: hint },
    (text) => parseAnswer(text, answerSchema(check)),
    (problem) => ctx.render('repair', { problem, format: contract }),
  );
  if (!answer.ok) return { failure: answer.failure };
  const { label, score, reason } = answer.value;
  if (label !== undefined) {
    const pass = (check.passing ?? [check.labels![0]!]).includes(label);
    return turn(check, { pass, score: pass ? 1 : 0, reason: `${label}: ${reason}` });
  }
  const threshold = check.threshold ?? check.range![1];
  return turn(check, { pass: score! >= threshold, score: score!, reason: `${score}: ${reason}` });
}

/**
 * A choice's score: its `choiceScores` entry (missing: 0; the invalid choice the lowest score, as
 * openai/evals counts it); without scores, 1 for the first choice, else 0.
 */
function choiceScore(check: GradedCheck, choice: string): number {
  if (check.choiceScores) {
    if (choice === INVALID_CHOICE) return Math.min(...Object.values(check.choiceScores));
    return check.choiceScores[choice] ?? 0;
  }
  return choice === check.choices![0] ? 1 : 0;
}

/** The choices that pass: those scoring at the threshold or more (default 1). */
function passingChoices(check: GradedCheck): string[] {
  return check.choices!.filter((c) => choiceScore(check, c) >= (check.threshold ?? 1));
}

function turn(check: GradedCheck, verdict: Verdict): Verdict {
  return check.not
    ? { pass: !verdict.pass, score: 1 - verdict.score, reason: `not: ${verdict.reason}` }
    : verdict;
}
