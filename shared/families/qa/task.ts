import { z } from 'zod';
import { parseAnswer } from '../../family/answer.js';
import { ask, baseRequest, refused } from '../../family/ask.js';
import { contentId, readColumn } from '../../family/rows.js';
import { defineFamily, type Scorer, type Solved, type TaskContext } from '../../family/types.js';
import { type AnswerMatch, bestMatch, readAnswerSet } from '../../lib/metrics/answer-match.js';
import type { Item, Score } from '../../model/model.js';
import type { JsonSchemaSpec } from '../../model/provider.js';
import { fastGrade, finalNumber, optionsInQuestion, type QuestionType } from './fast-path.js';
import { QaTally, type QaTallyState, qaReportText } from './report.js';
import { type QaHint, simulateQa } from './simulate.js';
import { checkQaSuite, type QaSuite, qaColumns, qaShape } from './suite.js';

const TYPES: readonly QuestionType[] = ['mcq', 'numeric', 'explanation', 'text'];
const LETTERS = 'ABCDEFGH';
/** Columns the key is read from when the suite maps none, in order. */
const KEY_COLUMNS = ['answer', 'correct', 'key', 'answer_number'] as const;

export interface QaOutput {
  answer: string;
}

const GRADE_SCHEMA = z.object({ score: z.number().min(0).max(1), reasoning: z.string().optional() });
const GRADE_JSON_SCHEMA: JsonSchemaSpec = {
  name: 'grade',
  schema: {
    type: 'object',
    properties: { score: { type: 'number' }, reasoning: { type: 'string' } },
    required: ['score', 'reasoning'],
    additionalProperties: false,
  },
};

function paths(suite: QaSuite): Record<string, string> {
  const { template, context } = suite.qa;
  return {
    answer: `qa/answer-${template}${context ? '-context' : ''}.md`,
    'grade.mcq': 'qa/grade-mcq.md',
    'grade.numeric': 'qa/grade-numeric.md',
    'grade.explanation': 'qa/grade-explanation.md',
    repair: 'qa/repair.md',
  };
}

/**
 * The options a list column holds (JSON text of an array of strings or numbers), lettered A, B, …
 * in order, empty ones left out; or why it holds none.
 */
function optionList(text: string | undefined): Record<string, string> | string {
  if (text === undefined) return 'is missing';
  let list: unknown;
  try {
    list = JSON.parse(text);
  } catch {
    return 'is not a list of options (a JSON array)';
  }
  if (!Array.isArray(list) || !list.every((o) => typeof o === 'string' || typeof o === 'number'))
    return 'is not a list of options (an array of texts)';
  if (list.length > LETTERS.length) return `holds ${list.length} options, more than ${LETTERS.length}`;
  const options = Object.fromEntries(
    list.flatMap((o, i) => (String(o).trim() === '' ? [] : [[LETTERS[i]!, String(o)]])),
  );
  return Object.keys(options).length >= 2 ? options : 'holds fewer than two options';
}

/** An item's MCQ options by letter: the suite's option columns, else those listed in the question. */
function optionsOf(item: Item): Record<string, string> {
  return item.input.options
    ? (JSON.parse(item.input.options) as Record<string, string>)
    : optionsInQuestion(item.input.question!);
}

/** The question as the model sees it: with its options when they come from columns. */
function questionText(item: Item): string {
  if (!item.input.options) return item.input.question!;
  const options = Object.entries(optionsOf(item)).map(([letter, text]) => `(${letter}) ${text}`);
  return `${item.input.question} ${options.join(' ')}`;
}

/**
 * An item's acceptable answers: its key, or the keys of a set (the gold then holds them as a
 * JSON array; a single key is held as itself).
 */
export function keysOf(item: Pick<Item, 'gold'>): string[] {
  const gold = item.gold ?? '';
  if (gold.startsWith('[')) {
    try {
      const list = JSON.parse(gold) as unknown;
      if (Array.isArray(list)) return list.map(String);
    } catch {
      // A single key that happens to open with a bracket.
    }
  }
  return [gold];
}

/** A `text` question's incorrect answers (none when the dataset gives none). */
const incorrectOf = (item: Item): string[] =>
  item.input.incorrect ? (JSON.parse(item.input.incorrect) as string[]) : [];

const shown = (x: number) => String(Math.round(x * 1000) / 1000);

/**
 * A `text` answer matched against the acceptable answers: its best match over them (see
 * answer-match.ts); with incorrect answers, that match counts only when it beats the answer's
 * best match with an incorrect one (else 0), as TruthfulQA scores its similarity metrics.
 */
function matchText(answer: string, item: Item, how: AnswerMatch): Score {
  const right = bestMatch(how, answer, keysOf(item))!;
  const wrong = bestMatch(how, answer, incorrectOf(item));
  const beaten = wrong !== undefined && wrong.value >= right.value;
  return {
    kind: 'number',
    value: beaten ? 0 : right.value,
    decidedBy: `match:${how}`,
    explanation: `${how} ${shown(right.value)} against ${JSON.stringify(right.reference)}${
      wrong === undefined
        ? ''
        : `; ${shown(wrong.value)} against the incorrect ${JSON.stringify(wrong.reference)}${beaten ? ' (no better than an incorrect answer: 0)' : ''}`
    }`,
  };
}

const toleranceOf = (item: Item, suite: QaSuite) =>
  item.input.tolerance !== undefined ? Number(item.input.tolerance) : suite.qa.tolerance;

/** The LLM grader's verdict: the grader is the suite's last backend (the only one when outputs are given). */
async function llmGrade(output: QaOutput, item: Item, ctx: TaskContext<QaSuite>): Promise<Score> {
  const grader = ctx.backends.at(-1);
  const type = item.input.type as QuestionType;
  if (!grader) {
    return {
      kind: 'number',
      unscored: {
        kind: 'provider',
        message: `the fast path cannot decide this ${type} answer and the suite has no backend to grade it with`,
      },
    };
  }
  const options = optionsOf(item);
  const keys = keysOf(item);
  const key = keys[0]!;
  // Several acceptable answers are all shown to the grader; a text answer gets the explanation rubric.
  const reference = keys.map((k) => (type === 'mcq' && options[k] ? `${k} (${options[k]})` : k)).join(' or ');
  const tolerance = toleranceOf(item, ctx.suite);
  const hint: QaHint = {
    family: 'qa',
    stage: 'grade',
    item: item.id,
    type,
    key,
    options,
    predicted: output.answer,
    tolerance,
  };
  const answer = await ask(
    ctx,
    'grade',
    grader,
    {
      ...baseRequest(
        ctx,
        grader,
        ctx.render(`grade.${type === 'text' ? 'explanation' : type}`, {
          predicted: output.answer,
          reference,
          tolerance: String(Math.round(tolerance * 1000) / 10),
        }),
      ),
      jsonSchema: ctx.suite.params.structuredOutput ? GRADE_JSON_SCHEMA : undefined,
      simulation: hint,
    },
    (text) => parseAnswer(text, GRADE_SCHEMA),
    (problem) => ctx.render('repair', { problem }),
  );
  if (!answer.ok) return { kind: 'number', unscored: answer.failure };
  return {
    kind: 'number',
    value: answer.value.score,
    decidedBy: grader.id,
    ...(answer.value.reasoning ? { explanation: answer.value.reasoning } : {}),
  };
}

function scorers(suite: QaSuite): Record<string, Scorer<QaOutput, QaSuite>> {
  const out: Record<string, Scorer<QaOutput, QaSuite>> = {
    score: {
      kind: 'number',
      description:
        'the answer graded against the key: 1 right, 0 wrong (explanations from 0 to 1 by rubric); the fast path decides unambiguous MCQ and numeric answers, the LLM grader the rest',
      // An answer scoring 0.5 or more counts as right (fixed / broken in comparisons).
      metrics: { threshold: 0.5 },
      score: (output, item, ctx) => {
        const type = item.input.type as QuestionType;
        if (type === 'text') return matchText(output.answer, item, ctx.suite.qa.match);
        if (ctx.suite.qa.fastPath) {
          // Right when it is right against any acceptable key; wrong only when every key decides it wrong.
          const keys = keysOf(item);
          const grades = keys.map((key) =>
            fastGrade(type, output.answer, key, {
              options: optionsOf(item),
              tolerance: toleranceOf(item, ctx.suite),
              ...(item.input.unit ? { keyUnit: item.input.unit } : {}),
            }),
          );
          const fast =
            grades.find((g) => g.decided && g.correct) ??
            (grades.every((g) => g.decided) ? grades[0] : undefined);
          if (fast?.decided) {
            return {
              kind: 'number',
              value: fast.correct ? 1 : 0,
              decidedBy: fast.decidedBy,
              explanation: `read ${fast.extracted}; key ${keys.join(' or ')}`,
            };
          }
        }
        return llmGrade(output, item, ctx);
      },
    },
  };
  if (suite.qa.audit) {
    out.llm = {
      kind: 'number',
      description: "the LLM grader on every item, the fast path's too (audit)",
      metrics: { threshold: 0.5 },
      score: (output, item, ctx) => llmGrade(output, item, ctx),
    };
  }
  return out;
}

/**
 * QA evaluation (`task: "qa"`), after the physics QA study: a model under test answers
 * questions — or the dataset gives the answers — and graders score them against the key.
 */
export const qaFamily = defineFamily<QaSuite, QaOutput>({
  name: 'qa',
  description:
    'Question answering graded against a key: multiple choice, numeric within a tolerance, explanations by rubric; a deterministic fast path before the LLM grader.',

  suite: {
    shape: qaShape,
    columns: qaColumns,
    check: checkQaSuite,
    scoreDefaults: { backends: [] },
    outputColumns: ['predicted', 'prediction', 'pred', 'output', 'answer_text'],
    goldColumns: KEY_COLUMNS,
    // A column of options may hold them as a list, and so may the key and the incorrect answers.
    jsonColumns: ['options', 'gold', 'incorrect'],
  },

  config: (suite) => ({
    template: suite.qa.template,
    ...(suite.qa.context ? { context: 'with context' } : {}),
  }),

  roles: {
    answer: { placeholders: ['question', 'context'], data: ['question', 'context'] },
    grade: { placeholders: ['predicted', 'reference', 'tolerance'], data: ['predicted', 'reference'] },
    repair: { placeholders: ['problem'], data: ['problem'] },
  },

  promptPaths: (suite) => ({ ...paths(suite), ...suite.prompts }),

  defaultPromptSets: () =>
    (['chat', 'mistral'] as const).flatMap((template) =>
      [false, true].map((context) =>
        paths({ qa: { template, context, tolerance: 0.05, fastPath: true, audit: false } } as QaSuite),
      ),
    ),

  parseRow(record, row, suite) {
    const cols = suite.dataset.columns;
    const id = readColumn(record, cols.id, ['id', 'idx', 'question_id'])?.value.trim() || undefined;
    const question = readColumn(record, cols.question, ['question', 'problem_text'])?.value;
    if (question === undefined) return { id, error: `missing column ${cols.question ?? 'question'}` };
    const typed = readColumn(record, cols.type, ['type'])?.value.trim().toLowerCase();
    const type = (typed || suite.qa.type || (cols.options ? 'mcq' : undefined)) as QuestionType | undefined;
    if (!type)
      return {
        id,
        error: `missing column ${cols.type ?? 'type'} (mcq, numeric or explanation; or set qa.type)`,
      };
    if (!TYPES.includes(type))
      return { id, error: `type ${JSON.stringify(typed)} is not one of ${TYPES.join(', ')}` };
    const keyCol = readColumn(record, cols.gold, KEY_COLUMNS);
    if (!keyCol?.value.trim()) return { id, error: `no key (column ${cols.gold ?? 'answer'})` };
    // The key may be a set of acceptable answers: a JSON array, or texts between qa.answerSeparator.
    const keySet = readAnswerSet(keyCol.value, suite.qa.answerSeparator);
    if ('error' in keySet) return { id, error: `the key (column ${keyCol.key}) ${keySet.error}` };

    const input: Record<string, string> = { question, type };
    let options: Record<string, string>;
    if (typeof cols.options === 'string') {
      const listed = optionList(record[cols.options]);
      if (typeof listed === 'string') return { id, error: `column ${cols.options} ${listed}` };
      options = listed;
      input.options = JSON.stringify(options);
    } else if (cols.options) {
      const missing = cols.options.filter((c) => record[c] === undefined);
      if (missing.length > 0) return { id, error: `missing option column ${missing.join(', ')}` };
      // An empty option column is no option (a question of three in a file of four columns):
      // it is never shown, and its letter is not a key.
      options = Object.fromEntries(
        cols.options.flatMap((c, i) => (record[c]!.trim() === '' ? [] : [[LETTERS[i]!, record[c]!]])),
      );
      input.options = JSON.stringify(options);
    } else options = optionsInQuestion(question);
    const keys: string[] = [];
    for (const key of keySet) {
      let gold = key;
      if (type === 'mcq') {
        gold = key.replace(/[().]/g, '').toUpperCase();
        if (!(gold in options) && !(Object.keys(options).length === 0 && /^[A-D]$/.test(gold)))
          return {
            id,
            error: `key ${JSON.stringify(key)} is not one of the options ${Object.keys(options).join(', ') || '(none found)'}`,
          };
      }
      if (type === 'numeric' && !finalNumber(key).decided)
        return { id, error: `key ${JSON.stringify(key)} is not a number` };
      keys.push(gold);
    }
    const gold = keys.length === 1 ? keys[0]! : JSON.stringify(keys);
    if (type === 'text') {
      const incorrect = readColumn(record, cols.incorrect, ['incorrect_answers']);
      if (cols.incorrect !== undefined && incorrect === undefined)
        return { id, error: `missing column ${cols.incorrect}` };
      if (incorrect && incorrect.value.trim() !== '') {
        const wrong = readAnswerSet(incorrect.value, suite.qa.answerSeparator);
        if ('error' in wrong)
          return { id, error: `the incorrect answers (column ${incorrect.key}) ${wrong.error}` };
        input.incorrect = JSON.stringify(wrong);
      }
    }
    if (suite.qa.context) {
      const context = readColumn(record, cols.context, ['context'])?.value;
      if (context === undefined)
        return { id, error: `missing column ${cols.context ?? 'context'} (qa.context is on)` };
      input.context = context;
    }
    const tolerance = readColumn(record, cols.tolerance, ['tolerance'])?.value.trim();
    if (tolerance) {
      const t = Number(tolerance);
      if (!(t >= 0 && t <= 1))
        return { id, error: `tolerance ${JSON.stringify(tolerance)} is not in [0, 1]` };
      input.tolerance = String(t);
    }
    const unit = readColumn(record, cols.unit, ['unit'])?.value.trim();
    if (unit) input.unit = unit;
    if (Object.values(input).some((v) => v.length > suite.dataset.maxFieldChars))
      return { id, error: `field longer than ${suite.dataset.maxFieldChars} characters` };
    return { item: { id: id ?? contentId(input), row, input, gold } };
  },

  async solve(item, ctx): Promise<Solved<QaOutput>> {
    const backend = ctx.backends[0]!;
    const hint: QaHint = {
      family: 'qa',
      stage: 'answer',
      item: item.id,
      type: item.input.type as QuestionType,
      key: keysOf(item)[0]!,
      options: optionsOf(item),
      question: questionText(item),
    };
    // The template format the answer is sent in: its markers are neutralised in the question
    // and context, so no question can close the [INST] turn and open one of its own.
    const prompt = ctx.render(
      'answer',
      { question: questionText(item), context: item.input.context ?? '' },
      ctx.suite.qa.template,
    );
    const completion = await ctx.call('answer', backend, {
      // The [INST] template is the model's own format: sent whole to a completion endpoint.
      ...baseRequest(ctx, backend, prompt, { rawCompletion: ctx.suite.qa.template === 'mistral' }),
      simulation: hint,
    });
    const refusal = refused(completion);
    if (refusal) return refusal;
    if (completion.text.trim() === '')
      return { ok: false, failure: { kind: 'parse', message: 'empty answer' } };
    return { ok: true, output: { answer: completion.text.trim() }, details: { model: backend.id } };
  },

  readOutput: (given) =>
    given.output === undefined || given.output.trim() === ''
      ? { ok: false, failure: { kind: 'no_output', message: 'no answer given for this item' } }
      : { ok: true, output: { answer: given.output.trim() } },

  scorers,

  primaryScorer: () => 'score',

  outputText: (output) => output.answer,

  outputLength: (output) => output.answer?.length,

  simulate: simulateQa,

  reportTally: (suite, state) => new QaTally(suite, state as QaTallyState | undefined),

  reportText: qaReportText,
});
