import { parseAnswer } from '../../family/answer.js';
import { type Asked, ask, baseRequest } from '../../family/ask.js';
import { contentId, readColumn } from '../../family/rows.js';
import { defineFamily, type Scorer, type Solved, type TaskContext } from '../../family/types.js';
import { placeholders } from '../../lib/prompts/prompts.js';
import { type Item, storedFieldLength } from '../../model/model.js';
import {
  answerJsonSchema,
  answerSchema,
  answerVars,
  declaredLabel,
  goldNumber,
  type JudgeOutput,
} from './answer.js';
import { WITHIN_ONE } from './metrics.js';
import {
  givenInBothOrders,
  goldPreference,
  type Order,
  PAIRWISE_LABELS,
  type PairwiseAnswers,
  PairwiseTally,
  type PairwiseTallyState,
  type Preference,
  pairwiseAnswerBlock,
  pairwiseReportText,
  pairwiseVerdict,
  swapBack,
  swappedInput,
} from './pairwise.js';
import { type JudgeHint, SIM_POSITION_BIAS, simulateJudge } from './simulate.js';
import { checkJudgeSuite, type JudgeSuite, judgeShape } from './suite.js';

const GOLD_COLUMNS = ['gold', 'label'] as const;

/** `prompts/tone.md` and `tone.md` both name the file at prompts/tone.md. */
const promptPath = (suite: JudgeSuite) => suite.judge.prompt.replace(/^\.?\/?prompts\//, '');

/** The shipped prompts: the answer contract of each kind, and the repair pass. */
const SHIPPED = {
  labels: { answer: 'judge/answer-labels.md', repair: 'judge/repair.md' },
  range: { answer: 'judge/answer-range.md', repair: 'judge/repair.md' },
  pairwise: { answer: 'judge/answer-pairwise.md', repair: 'judge/repair.md' },
};

function paths(suite: JudgeSuite): Record<string, string> {
  const kind = suite.judge.pairwise ? 'pairwise' : suite.judge.labels ? 'labels' : 'range';
  return { judge: promptPath(suite), ...SHIPPED[kind] };
}

/** The labels a judge answers: its declared ones, or a pairwise judge's A, B and tie. */
function labelsOf(suite: JudgeSuite): readonly string[] | undefined {
  return suite.judge.pairwise ? PAIRWISE_LABELS : suite.judge.labels;
}

/** A preference (gold or given answer) of a pairwise judge, or what is wrong with it. */
function readPreference(
  suite: JudgeSuite,
  what: string,
  value: string,
): { value: Preference } | { error: string } {
  const columns = suite.judge.pairwise!;
  const preference = goldPreference(value, columns);
  return preference
    ? { value: preference }
    : {
        error: `${what} ${JSON.stringify(value)} is not a preference (A, B or tie; also a, b, model_a, model_b, tie (bothbad), ${columns.join(', ')})`,
      };
}

/** The gold as the judge's answer kind reads it: a declared label, or a number. */
function parseGold(suite: JudgeSuite, value: string): { gold: string } | { error: string } {
  const { labels } = suite.judge;
  if (suite.judge.pairwise) {
    const read = readPreference(suite, 'gold', value);
    return 'error' in read ? read : { gold: read.value };
  }
  if (labels) {
    const label = declaredLabel(labels, value);
    return label
      ? { gold: label }
      : { error: `gold ${JSON.stringify(value)} is not one of ${labels.join(', ')}` };
  }
  const n = goldNumber(value);
  return n === undefined ? { error: `gold ${JSON.stringify(value)} is not a number` } : { gold: String(n) };
}

/** Where given answers come from, as a result's `decidedBy` names it: `given (verdict)`. */
function givenBy(suite: JudgeSuite): string {
  const { output } = suite.dataset.columns;
  return `given (${typeof output === 'string' ? output : (output ?? []).join(', ')})`;
}

/**
 * A pairwise judge's verdicts the dataset gives in both orders: the first column's for the pair
 * as given (A shown first), the second's for the pair swapped (B shown first), each read as
 * that order shows the answers (in the swapped order `A` is the answer shown first, the
 * dataset's B). They make the verdict as a judge asked in both orders does.
 */
function readGivenOrders(
  suite: JudgeSuite,
  values: readonly string[],
  explanation: string | undefined,
): Solved<JudgeOutput> {
  const columns = suite.dataset.columns.output as readonly string[];
  const read: Preference[] = [];
  for (const [i, order] of ['A,B', 'B,A'].entries()) {
    const value = values[i] ?? '';
    const column = columns[i];
    if (value.trim() === '')
      return {
        ok: false,
        failure: { kind: 'no_output', message: `no verdict given for order ${order} (column ${column})` },
      };
    const preference = readPreference(suite, `given (order ${order}, column ${column})`, value);
    if ('error' in preference) return { ok: false, failure: { kind: 'parse', message: preference.error } };
    read.push(preference.value);
  }
  const orders: PairwiseAnswers = { ab: read[0]!, ba: read[1]! };
  return pairwiseOutput(suite.judge, orders, explanation ?? '', givenBy(suite));
}

/** The judge's answer from a dataset column (`dataset.columns.output`). */
function readGiven(suite: JudgeSuite, value: string, explanation: string | undefined): Solved<JudgeOutput> {
  const { labels, range } = suite.judge;
  const reason = explanation ?? '';
  const decidedBy = givenBy(suite);
  if (suite.judge.pairwise) {
    const read = readPreference(suite, 'given', value);
    return 'error' in read
      ? { ok: false, failure: { kind: 'parse', message: read.error } }
      : { ok: true, output: { label: read.value, reason, decidedBy } };
  }
  if (labels) {
    const label = declaredLabel(labels, value);
    if (label) return { ok: true, output: { label, reason, decidedBy } };
    return {
      ok: false,
      failure: {
        kind: 'parse',
        message: `given ${JSON.stringify(value)} is not one of ${labels.join(', ')}`,
      },
    };
  }
  const score = goldNumber(value);
  if (score !== undefined && range && score >= range[0] && score <= range[1])
    return { ok: true, output: { score, reason, decidedBy } };
  return {
    ok: false,
    failure: {
      kind: 'parse',
      message: `given ${JSON.stringify(value)} is not a number from ${range?.[0]} to ${range?.[1]}`,
    },
  };
}

/**
 * Whether a range judge's numbers are an ordinal scale (the quadratic weighted kappa, ordinal
 * alpha): as the suite declares with `ordinal`, else when the range is whole numbers with at
 * least three points (1 to 5, 0 to 10). A two-point range such as [0, 1] is not a scale by
 * default: its answers are fractions (a share, a probability) and its gold often 0/1, where a
 * weighted kappa of fractional scores against 0/1 labels measures no agreement on a scale; and
 * a true two-point scale has no near miss for a weighted kappa to weigh.
 */
export function ordinalRange(judge: JudgeSuite['judge']): boolean {
  const { range, ordinal } = judge;
  if (range === undefined) return false;
  if (ordinal !== undefined) return ordinal;
  return Number.isInteger(range[0]) && Number.isInteger(range[1]) && range[1] - range[0] >= 2;
}

function scorers(suite: JudgeSuite): Record<string, Scorer<JudgeOutput, JudgeSuite>> {
  const { threshold } = suite.judge;
  const labels = labelsOf(suite);
  const facts = (output: JudgeOutput) => ({ explanation: output.reason, decidedBy: output.decidedBy });
  if (labels) {
    return {
      label: {
        kind: 'label',
        description: "the judge's label against the gold label",
        score: (output) => ({ kind: 'label', value: output.label!, ...facts(output) }),
        target: (item) => item.gold,
        metrics: {
          labelOrder: labels,
          ...(suite.judge.positive ? { positive: suite.judge.positive } : {}),
          ...(suite.judge.ordinal && !suite.judge.pairwise ? { ordinal: true } : {}),
        },
      },
    };
  }
  const out: Record<string, Scorer<JudgeOutput, JudgeSuite>> = {
    score: {
      kind: 'number',
      description: "the judge's score against the gold score",
      score: (output) => ({ kind: 'number', value: output.score!, ...facts(output) }),
      target: (item) => (item.gold === undefined ? undefined : Number(item.gold)),
      metrics: {
        ...(threshold === undefined ? {} : { threshold }),
        ...(ordinalRange(suite.judge) ? { ordinal: true, extra: { withinOne: WITHIN_ONE } } : {}),
      },
    },
  };
  if (threshold !== undefined) {
    out.pass = {
      kind: 'pass',
      description: `the score at or above ${threshold}, against the gold at or above it`,
      score: (output) => ({ kind: 'pass', value: output.score! >= threshold, ...facts(output) }),
      target: (item) => (item.gold === undefined ? undefined : Number(item.gold) >= threshold),
    };
  }
  return out;
}

/**
 * Judges users declare without code (`task: "judge"`): a prompt over dataset columns, an
 * answer that is a declared label or a number in a declared range, metrics by that kind.
 */
export const judgeFamily = defineFamily<JudgeSuite, JudgeOutput>({
  name: 'judge',
  description:
    'A judge declared without code: a prompt whose placeholders are dataset columns, answering one of some labels or a number in a range.',

  suite: {
    shape: judgeShape,
    check: checkJudgeSuite,
    goldColumns: GOLD_COLUMNS,
    placeholderColumns: true,
    // A pairwise judge's verdicts may be given in both orders, a column each.
    severalOutputs: true,
    // A judge with a range scores a number, its gold a rating: several annotators' are averaged.
    numericGold: (suite) => suite.judge.range !== undefined,
  },

  config: (suite) => ({
    answer: suite.judge.pairwise
      ? `pairwise ${suite.judge.pairwise.join(' vs ')}, ${
          // A single verdict the dataset gives was not asked in both orders; two columns give both.
          givenInBothOrders(suite)
            ? `both orders given (${(suite.dataset.columns.output as string[]).join(', ')}), inconsistent → ${suite.judge.inconsistent ?? 'tie'}`
            : suite.dataset.columns.output !== undefined
              ? 'the verdicts given'
              : `both orders, inconsistent → ${suite.judge.inconsistent ?? 'tie'}`
        }`
      : suite.judge.labels
        ? `labels ${suite.judge.labels.join('/')}${suite.judge.ordinal ? ' (ordinal)' : ''}`
        : `range ${suite.judge.range!.join('..')}${suite.judge.ordinal === undefined ? '' : suite.judge.ordinal ? ' (ordinal)' : ' (not ordinal)'}`,
  }),

  roles: {
    judge: { placeholders: 'columns' },
    answer: { placeholders: ['labels', 'min', 'max', 'fields'] },
    repair: { placeholders: ['problem', 'format'], data: ['problem'] },
  },

  promptPaths: (suite) => ({ ...paths(suite), ...suite.prompts }),

  // The judge prompt itself is the user's: only the shipped files are defaults.
  defaultPromptSets: () => Object.values(SHIPPED),

  parseRow(record, row, suite, prompts) {
    const cols = suite.dataset.columns;
    const id = readColumn(record, cols.id, ['id', 'idx'])?.value.trim() || undefined;
    const text = prompts[promptPath(suite)]?.text ?? '';
    const read = [...placeholders(text)];
    // A placeholder reads the column `dataset.columns` maps it to, else the one of its name.
    const named = cols as Record<string, unknown>;
    const columnOf = (placeholder: string) => {
      const column = named[placeholder];
      return typeof column === 'string' ? column : placeholder;
    };
    const missing = read.filter((placeholder) => record[columnOf(placeholder)] === undefined);
    if (missing.length > 0)
      return {
        id,
        error: `missing column ${missing.map((p) => (columnOf(p) === p ? p : `${columnOf(p)} for {${p}}`)).join(', ')} (the prompt reads it)`,
      };
    const unread = (suite.judge.pairwise ?? []).filter((column) => !read.includes(column));
    if (unread.length > 0)
      return {
        id,
        error: `the prompt ${promptPath(suite)} does not read ${unread.map((c) => `{${c}}`).join(', ')}, an answer the pairwise judge compares`,
      };
    const input = Object.fromEntries(
      read.map((placeholder) => [placeholder, record[columnOf(placeholder)]!]),
    );
    if (Object.values(input).some((v) => v.length > suite.dataset.maxFieldChars))
      return { id, error: `field longer than ${suite.dataset.maxFieldChars} characters` };
    const goldCol = readColumn(record, cols.gold, GOLD_COLUMNS);
    if (cols.gold !== undefined && goldCol === undefined) return { id, error: `missing column ${cols.gold}` };
    let gold: string | undefined;
    if (goldCol && goldCol.value.trim() !== '') {
      const parsed = parseGold(suite, goldCol.value);
      if ('error' in parsed)
        return { id, error: `${parsed.error} (column ${goldCol.key})`, gold: goldCol.value };
      gold = parsed.gold;
    }
    return { item: { id: id ?? contentId(input), row, input, ...(gold !== undefined ? { gold } : {}) } };
  },

  async solve(item, ctx): Promise<Solved<JudgeOutput>> {
    if (ctx.suite.judge.pairwise) return solvePairwise(item, ctx);
    const { judge } = ctx.suite;
    const backend = ctx.backends[0]!;
    const contract = ctx.render('answer', answerVars(judge));
    const hint: JudgeHint = {
      family: 'judge',
      item: item.id,
      ...(judge.labels ? { labels: judge.labels } : { range: judge.range! }),
      ...(item.gold !== undefined ? { gold: item.gold } : {}),
      fields: (judge.schema?.properties as Record<string, unknown> | undefined) ?? {},
    };
    const schema = answerSchema(judge);
    const answer = await ask(
      ctx,
      'judge',
      backend,
      {
        ...baseRequest(ctx, backend, `${ctx.render('judge', item.input)}\n\n${contract}`),
        jsonSchema: ctx.suite.params.structuredOutput ? answerJsonSchema(judge) : undefined,
        simulation: hint,
      },
      (text) => parseAnswer(text, schema),
      (problem) => ctx.render('repair', { problem, format: contract }),
    );
    return answer.ok
      ? { ok: true, output: { ...answer.value, decidedBy: backend.id } }
      : { ok: false, failure: answer.failure, raw: answer.raw };
  },

  readOutput: (given, _item, suite) =>
    givenInBothOrders(suite)
      ? readGivenOrders(suite, given.outputs ?? [], given.explanation)
      : given.output === undefined
        ? { ok: false, failure: { kind: 'no_output', message: 'no answer given for this item' } }
        : readGiven(suite, given.output, given.explanation),

  scorers,

  primaryScorer: (suite) => (labelsOf(suite) ? 'label' : 'score'),

  // The label or score and the reason are the scores; only extra answer fields and a pairwise
  // judge's answers in each order add anything.
  outputText: (output) => {
    const parts = [
      ...(output.orders ? [ordersText(output.orders)] : []),
      ...(output.fields ? [JSON.stringify(output.fields)] : []),
    ];
    return parts.length > 0 ? parts.join(' ') : undefined;
  },

  // The judged text: the column the prompt reads last (the text under judgement, after the
  // context it is judged against), at its full length. A pairwise judge reads two; its length
  // figures are its own (see the report tally).
  outputLength: (output, input) => {
    if (output.orders) return undefined;
    const judged = Object.values(input).at(-1);
    return judged === undefined ? undefined : storedFieldLength(judged);
  },

  simulate: simulateJudge,

  // Pairwise judges' figures: position consistency and the first-position and longer-answer win rates.
  reportTally: (suite, state) =>
    suite.judge.pairwise ? new PairwiseTally(suite, state as PairwiseTallyState | undefined) : undefined,

  reportText: pairwiseReportText,
});

/** A pairwise judge's two answers, as labeled.csv shows them: `A,B: A; B,A: B (= A)`. */
function ordersText(orders: PairwiseAnswers): string {
  return `order A,B: ${orders.ab}; order B,A: ${orders.ba}${orders.ba === 'tie' ? '' : ` (= ${swapBack(orders.ba)})`}`;
}

/**
 * A pairwise judge's item: asked in the dataset order (A shown first) and in the swapped one,
 * two calls each with its own prompt (so its own cache entry); the swapped answer is mapped
 * back, and the two make the verdict (see `pairwiseVerdict`). Either order failing fails the item.
 */
type JudgeAnswer = Omit<JudgeOutput, 'decidedBy'>;

async function solvePairwise(item: Item, ctx: TaskContext<JudgeSuite>): Promise<Solved<JudgeOutput>> {
  const { judge } = ctx.suite;
  const block = pairwiseAnswerBlock(judge);
  const backend = ctx.backends[0]!;
  const contract = ctx.render('answer', answerVars(block));
  const schema = answerSchema(block);
  const askIn = (order: Order): Promise<Asked<JudgeAnswer>> => {
    const input = order === 'ab' ? item.input : swappedInput(item.input, judge.pairwise!);
    const gold =
      item.gold === undefined ? undefined : order === 'ab' ? item.gold : swapBack(item.gold as Preference);
    const hint: JudgeHint = {
      family: 'judge',
      item: item.id,
      labels: [...PAIRWISE_LABELS],
      ...(gold !== undefined ? { gold } : {}),
      fields: (judge.schema?.properties as Record<string, unknown> | undefined) ?? {},
      pairwise: { order, positionBias: SIM_POSITION_BIAS },
    };
    return ask(
      ctx,
      'judge',
      backend,
      {
        ...baseRequest(ctx, backend, `${ctx.render('judge', input)}\n\n${contract}`),
        jsonSchema: ctx.suite.params.structuredOutput ? answerJsonSchema(block) : undefined,
        simulation: hint,
      },
      (text) => parseAnswer(text, schema),
      (problem) => ctx.render('repair', { problem, format: contract }),
    );
  };
  // Both calls settle before the item ends, so a call still in flight when the other throws
  // (a provider error, the budget) is booked to this item rather than after its result.
  const settled = await Promise.allSettled([askIn('ab'), askIn('ba')]);
  for (const outcome of settled) if (outcome.status === 'rejected') throw outcome.reason;
  const [ab, ba] = settled.map((o) => (o as PromiseFulfilledResult<Asked<JudgeAnswer>>).value) as [
    Asked<JudgeAnswer>,
    Asked<JudgeAnswer>,
  ];
  if (!ab.ok || !ba.ok) {
    const failed = !ab.ok ? ab : (ba as Extract<typeof ba, { ok: false }>);
    const order = failed === ab ? 'A,B' : 'B,A';
    return {
      ok: false,
      failure: { ...failed.failure, message: `order ${order}: ${failed.failure.message}` },
      ...(failed.raw !== undefined ? { raw: failed.raw } : {}),
    };
  }
  const orders: PairwiseAnswers = { ab: ab.value.label as Preference, ba: ba.value.label as Preference };
  return pairwiseOutput(
    judge,
    orders,
    { ab: ab.value.reason, ba: ba.value.reason },
    backend.id,
    ab.value.fields,
  );
}

/**
 * A pairwise item's outcome from its answers in both orders (asked, or given by the dataset):
 * the verdict by `pairwiseVerdict`, or the `inconsistent` failure when the suite's rule says
 * so. Either way the result keeps both answers (`details.pairwise`) for the position figures.
 * `reasons` is each order's reason when asked, or the one explanation the dataset gives.
 */
function pairwiseOutput(
  judge: JudgeSuite['judge'],
  orders: PairwiseAnswers,
  reasons: { ab: string; ba: string } | string,
  decidedBy: string,
  fields?: JudgeOutput['fields'],
): Solved<JudgeOutput> {
  const details = { pairwise: orders };
  const { verdict } = pairwiseVerdict(orders, judge.inconsistent);
  if (verdict === undefined) {
    return {
      ok: false,
      failure: {
        kind: 'inconsistent',
        message: `the two orders disagree: ${ordersText(orders)}`,
      },
      ...(typeof reasons === 'string'
        ? {}
        : { raw: `order A,B: ${reasons.ab}\n--- order B,A ---\n${reasons.ba}` }),
      details,
    };
  }
  const reason =
    typeof reasons === 'string'
      ? reasons
      : orders.ab === swapBack(orders.ba)
        ? reasons.ab
        : `order A,B: ${reasons.ab} | order B,A: ${reasons.ba}`;
  return {
    ok: true,
    output: { label: verdict, reason, ...(fields ? { fields } : {}), orders, decidedBy },
    details,
  };
}
