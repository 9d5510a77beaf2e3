import { baseRequest, refused } from '../../family/ask.js';
import { contentId, readColumn } from '../../family/rows.js';
import { defineFamily, type Scorer, type Solved, type TaskContext } from '../../family/types.js';
import { placeholders } from '../../lib/prompts/prompts.js';
import type { Failure, Item, Score } from '../../model/model.js';
import { answerList, deterministicVerdict, fill, textPlaceholders, type Verdict } from './deterministic.js';
import { parseFormula } from './formula.js';
import { gradedVerdict } from './graded.js';
import { PASS_KAPPA } from './metrics.js';
import { type ChecksHint, simulateChecks } from './simulate.js';
import {
  type Check,
  type ChecksSuite,
  checkChecksSuite,
  checkNames,
  checksShape,
  type DeterministicCheck,
  type GradedCheck,
} from './suite.js';

export interface ChecksOutput {
  text: string;
}

/** The placeholder naming the output under check. */
const OUTPUT = 'output';

/** `prompts/x.md` and `x.md` both name the file at prompts/x.md. */
const promptFile = (path: string) => path.replace(/^\.?\/?prompts\//, '');

/** The shipped answer contracts and repair pass a grader's label or score answer uses. */
const SHIPPED = {
  'contract.labels': 'judge/answer-labels.md',
  'contract.range': 'judge/answer-range.md',
  repair: 'judge/repair.md',
};

/** Every model check with the prompt role it is asked under: `grader.<name>` (`grader.<formula>.<name>` inside a formula). */
function gradedChecks(suite: ChecksSuite): { role: string; check: GradedCheck }[] {
  const names = checkNames(suite.checks.checks);
  return suite.checks.checks.flatMap((check, i): { role: string; check: GradedCheck }[] => {
    if (check.type === 'model') return [{ role: `grader.${names[i]}`, check }];
    if (check.type !== 'formula') return [];
    return Object.entries(check.checks).flatMap(([inner, c]) =>
      c.type === 'model' ? [{ role: `grader.${names[i]}.${inner}`, check: c }] : [],
    );
  });
}

function paths(suite: ChecksSuite): Record<string, string> {
  return {
    ...(suite.checks.prompt ? { answer: promptFile(suite.checks.prompt) } : {}),
    ...Object.fromEntries(gradedChecks(suite).map(({ role, check }) => [role, promptFile(check.prompt)])),
    ...SHIPPED,
  };
}

const PASSED = new Set(['pass', 'passed', 'true', 'yes', '1', '1.0']);
const FAILED = new Set(['fail', 'failed', 'false', 'no', '0', '0.0']);

/** A grade another tool gave: pass or fail; undefined when blank; null when it is neither. */
export function readGrade(value: string | undefined): boolean | undefined | null {
  const text = value?.trim().toLowerCase() ?? '';
  if (text === '') return undefined;
  if (PASSED.has(text)) return true;
  if (FAILED.has(text)) return false;
  return null;
}

/** The texts of a check that may name columns. */
function checkTexts(check: Check): string[] {
  switch (check.type) {
    case 'equals':
    case 'starts-with':
    case 'levenshtein':
      return [check.input, check.value];
    case 'contains':
    case 'match':
      return [check.input, ...check.values];
    case 'similarity':
      return [check.input, check.reference];
    case 'formula':
      return [check.input, ...Object.values(check.checks).flatMap(checkTexts)];
    default:
      return [check.input];
  }
}

/** The columns every row must have: those the checks' texts and the prompts name, beside the output. */
function neededColumns(suite: ChecksSuite, prompts: Record<string, { text: string }>): string[] {
  const named = new Set(suite.checks.checks.flatMap(checkTexts).flatMap(textPlaceholders));
  for (const check of suite.checks.checks) if (check.when) named.add(check.when);
  for (const path of Object.values(paths(suite)))
    if (!Object.values(SHIPPED).includes(path))
      for (const p of placeholders(prompts[path]?.text ?? '')) named.add(p);
  named.delete(OUTPUT);
  return [...named];
}

/** The columns holding other tools' grades: each check's, and the whole item's. */
function gradeColumns(suite: ChecksSuite): string[] {
  const columns = suite.checks.checks.flatMap((c) => (c.gold ? [c.gold] : []));
  return suite.checks.gold ? [...columns, suite.checks.gold] : columns;
}

/** A check's outcome on an item: its verdict, why it has none, or that it does not apply there. */
type Outcome = Verdict | { failure: Failure } | { notApplicable: string };

/** Each output's verdicts, worked out once for all its scorers (a grader is asked once per check). */
const verdicts = new WeakMap<ChecksOutput, Promise<Record<string, Outcome>>>();

function verdictsOf(output: ChecksOutput, item: Item, ctx: TaskContext<ChecksSuite>) {
  let found = verdicts.get(output);
  if (!found) {
    found = decideAll(output, item, ctx);
    verdicts.set(output, found);
  }
  return found;
}

/** A check whose `when` column is blank on this item: it does not apply, and passes. */
function notApplicable(check: Check, item: Item): Outcome | undefined {
  if (check.when === undefined || (item.input[check.when] ?? '').trim() !== '') return undefined;
  return { notApplicable: `not applicable: column ${check.when} is blank on this item` };
}

async function decideOne(
  check: DeterministicCheck | GradedCheck,
  role: string,
  vars: Record<string, string>,
  item: Item,
  ctx: TaskContext<ChecksSuite>,
): Promise<Outcome> {
  const skipped = notApplicable(check, item);
  if (skipped) return skipped;
  if (check.type !== 'model') return deterministicVerdict(check, vars);
  const gold = check.gold ? readGrade(item.input[check.gold]) : undefined;
  return gradedVerdict(
    check,
    { role, item: item.id, vars, ...(typeof gold === 'boolean' ? { gold } : {}) },
    ctx,
  );
}

async function decideAll(output: ChecksOutput, item: Item, ctx: TaskContext<ChecksSuite>) {
  const vars = { ...item.input, [OUTPUT]: output.text };
  const names = checkNames(ctx.suite.checks.checks);
  const out: Record<string, Outcome> = {};
  for (const [i, check] of ctx.suite.checks.checks.entries()) {
    const name = names[i]!;
    if (check.type !== 'formula') {
      out[name] = await decideOne(check, `grader.${name}`, vars, item, ctx);
      continue;
    }
    const skipped = notApplicable(check, item);
    if (skipped) {
      out[name] = skipped;
      continue;
    }
    const scores: Record<string, number> = {};
    let failed: Outcome | undefined;
    for (const [inner, c] of Object.entries(check.checks)) {
      const outcome = await decideOne(c, `grader.${name}.${inner}`, vars, item, ctx);
      if ('failure' in outcome || 'notApplicable' in outcome) failed ??= outcome;
      else scores[inner] = outcome.score;
    }
    if (failed) {
      out[name] = failed;
      continue;
    }
    const score = parseFormula(check.formula, Object.keys(check.checks))(scores);
    const pass = Number.isFinite(score) && score >= check.threshold;
    out[name] = {
      pass: check.not ? !pass : pass,
      score,
      reason: `${check.formula} = ${score} (${Object.entries(scores)
        .map(([k, v]) => `${k} ${v}`)
        .join(', ')}; pass at ≥ ${check.threshold})`,
    };
  }
  return out;
}

function describe(check: Check): string {
  const not = check.not ? 'not ' : '';
  switch (check.type) {
    case 'model':
      return `${not}a grader model's verdict (${check.prompt})`;
    case 'formula':
      return `${not}${check.formula} ≥ ${check.threshold}`;
    case 'similarity':
      return `${not}${check.metric} ≥ ${check.threshold}`;
    default:
      return `${not}${check.type}`;
  }
}

function scoreOf(outcome: Outcome, decidedBy: string): Score {
  if ('failure' in outcome) return { kind: 'pass', unscored: outcome.failure };
  if ('notApplicable' in outcome)
    return { kind: 'pass', unscored: { kind: 'not_applicable', message: outcome.notApplicable } };
  return {
    kind: 'pass',
    value: outcome.pass,
    explanation: outcome.reason,
    decidedBy,
    details: { score: outcome.score },
  };
}

/** The target of a pass scorer from a grade column; undefined when blank. */
const gradeTarget = (column: string | undefined) =>
  column === undefined ? undefined : (item: Item) => readGrade(item.input[column]) ?? undefined;

function scorers(suite: ChecksSuite): Record<string, Scorer<ChecksOutput, ChecksSuite>> {
  const names = checkNames(suite.checks.checks);
  const out: Record<string, Scorer<ChecksOutput, ChecksSuite>> = {
    pass: {
      kind: 'pass',
      description: 'every check passes',
      ...(suite.checks.gold ? { target: gradeTarget(suite.checks.gold) } : {}),
      metrics: { extra: { passKappa: PASS_KAPPA } },
      score: async (output, item, ctx) => {
        const all = Object.entries(await verdictsOf(output, item, ctx));
        const failed = all.find(([, o]) => 'failure' in o);
        if (failed) {
          const { failure } = failed[1] as { failure: Failure };
          return { kind: 'pass', unscored: { ...failure, message: `${failed[0]}: ${failure.message}` } };
        }
        // A check that does not apply to the item takes no part in its verdict.
        const missed = all
          .filter(([, o]) => !('notApplicable' in o) && !(o as Verdict).pass)
          .map(([name]) => name);
        return {
          kind: 'pass',
          value: missed.length === 0,
          explanation: missed.length === 0 ? 'every check passes' : `failed: ${missed.join(', ')}`,
          decidedBy: 'checks',
        };
      },
    },
  };
  suite.checks.checks.forEach((check, i) => {
    const name = names[i]!;
    out[name] = {
      kind: 'pass',
      description: describe(check),
      ...(check.gold ? { target: gradeTarget(check.gold) } : {}),
      metrics: { extra: { passKappa: PASS_KAPPA } },
      score: async (output, item, ctx) =>
        scoreOf((await verdictsOf(output, item, ctx))[name]!, check.type === 'model' ? 'grader' : check.type),
    };
  });
  return out;
}

/** The text the model under test is expected to give, for the simulator: the first equality-like check's. */
function expectedText(suite: ChecksSuite, vars: Record<string, string>): string | undefined {
  for (const check of suite.checks.checks) {
    if (check.not) continue;
    if (check.type === 'equals' || check.type === 'starts-with' || check.type === 'levenshtein')
      return fill(check.value, vars);
    if (check.type === 'contains' || check.type === 'match') {
      const answers = check.values.flatMap((v) => answerList(fill(v, vars)));
      return check.type === 'contains' && check.mode === 'all' ? answers.join(' ') : answers[0];
    }
    if (check.type === 'similarity') return fill(check.reference, vars);
  }
  return undefined;
}

/**
 * Checks of an output (`task: "checks"`): the assertions and graders of other evaluation tools
 * (promptfoo, openai/evals, OpenAI Evals), each a pass scorer, the item passing when all do.
 */
export const checksFamily = defineFamily<ChecksSuite, ChecksOutput>({
  name: 'checks',
  description:
    'Checks of an output — string checks, patterns, JSON, edit distance, BLEU/ROUGE, grader models — each a pass scorer; an item passes when every check does.',

  suite: {
    shape: checksShape,
    check: checkChecksSuite,
    scoreDefaults: { backends: [] },
    outputColumns: ['output', 'output_text', 'completion', 'sampled', 'prediction'],
    placeholderColumns: true,
  },

  config: (suite) => ({
    checks: checkNames(suite.checks.checks).join(', '),
    ...(suite.dataset.columns.output ? {} : { asked: suite.checks.prompt! }),
  }),

  roles: {
    answer: { placeholders: 'columns' },
    grader: { placeholders: 'columns' },
    contract: { placeholders: ['labels', 'min', 'max', 'fields'] },
    repair: { placeholders: ['problem', 'format'], data: ['problem'] },
  },

  promptPaths: (suite) => ({ ...paths(suite), ...suite.prompts }),

  // The answer and grader prompts are the user's: only the shipped files are defaults.
  defaultPromptSets: () => [SHIPPED],

  parseRow(record, row, suite, prompts) {
    const cols = suite.dataset.columns;
    const id = readColumn(record, cols.id, ['id', 'idx'])?.value.trim() || undefined;
    const missing = neededColumns(suite, prompts).filter((c) => record[c] === undefined);
    if (missing.length > 0)
      return { id, error: `missing column ${missing.join(', ')} (a check or prompt reads it)` };
    for (const column of gradeColumns(suite)) {
      if (record[column] === undefined) return { id, error: `missing grade column ${column}` };
      if (readGrade(record[column]) === null)
        return {
          id,
          error: `grade ${JSON.stringify(record[column])} in column ${column} is not pass or fail`,
        };
    }
    const given = new Set([cols.output, cols.explanation].filter((c) => c !== undefined));
    const input = Object.fromEntries(Object.entries(record).filter(([key]) => !given.has(key)));
    if (Object.values(input).some((v) => v.length > suite.dataset.maxFieldChars))
      return { id, error: `field longer than ${suite.dataset.maxFieldChars} characters` };
    const overall = suite.checks.gold ? readGrade(record[suite.checks.gold]) : undefined;
    return {
      item: {
        id: id ?? contentId(input),
        row,
        input,
        ...(typeof overall === 'boolean' ? { gold: String(overall) } : {}),
      },
    };
  },

  async solve(item, ctx): Promise<Solved<ChecksOutput>> {
    const backend = ctx.backends[0]!;
    const expected = expectedText(ctx.suite, item.input);
    const hint: ChecksHint = {
      family: 'checks',
      stage: 'answer',
      item: item.id,
      ...(expected ? { expected } : {}),
    };
    const completion = await ctx.call('answer', backend, {
      ...baseRequest(ctx, backend, ctx.render('answer', item.input)),
      simulation: hint,
    });
    const refusal = refused(completion);
    if (refusal) return refusal;
    return { ok: true, output: { text: completion.text }, details: { model: backend.id } };
  },

  readOutput: (given) =>
    given.output === undefined
      ? { ok: false, failure: { kind: 'no_output', message: 'no output given for this item' } }
      : { ok: true, output: { text: given.output } },

  scorers,

  primaryScorer: () => 'pass',

  outputText: (output) => output.text,

  outputLength: (output) => output.text.length,

  simulate: simulateChecks,
});
