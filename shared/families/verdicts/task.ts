import { z } from 'zod';
import { contentId, readColumn } from '../../family/rows.js';
import { defineFamily, type Scorer, type Solved } from '../../family/types.js';
import type { BaseSuite } from '../../model/suite-base.js';

/**
 * Verdicts another tool gave (`task: "verdicts"`): each row is a test that passed, failed, or
 * met an error in promptfoo, OpenAI Evals or any grader, and Assay only counts. The given output
 * is the verdict — `pass`/`fail` (`true`/`false`, `1`/`0`) — or, for a test run several times, a
 * JSON list with one entry per repeat, `{ "verdict": "pass" | "fail" | "error", "reason"?,
 * "output"? }`: repeat i of the item reads the list's entry i. An error is no verdict: that
 * repeat has no value, and an item whose every repeat errored fails with the tool's error.
 */

export interface VerdictOutput {
  pass: boolean;
  reason?: string;
  /** What the model answered, as the tool recorded it. */
  output?: string;
}

/** One repeat's entry as the given output lists it. */
const entrySchema = z.object({
  verdict: z.enum(['pass', 'fail', 'error']),
  reason: z.string().optional(),
  output: z.string().optional(),
});

const WORDS: Record<string, boolean> = {
  pass: true,
  true: true,
  '1': true,
  fail: false,
  false: false,
  '0': false,
};

/** The verdict of repeat `sample` (1-based) of a given output; why there is none otherwise. */
export function readVerdict(
  given: { output?: string; explanation?: string },
  sample = 1,
): Solved<VerdictOutput> {
  const text = given.output?.trim();
  if (text === undefined || text === '')
    return { ok: false, failure: { kind: 'no_output', message: 'no verdict given for this item' } };
  if (!text.startsWith('[')) {
    const pass = WORDS[text.toLowerCase()];
    if (pass === undefined)
      return {
        ok: false,
        failure: {
          kind: 'parse',
          message: `verdict ${JSON.stringify(text.slice(0, 60))} is not pass or fail`,
        },
        raw: text,
      };
    if (sample > 1)
      return { ok: false, failure: { kind: 'no_output', message: `no repeat ${sample} of this item` } };
    return { ok: true, output: { pass, ...(given.explanation ? { reason: given.explanation } : {}) } };
  }
  let list: unknown;
  try {
    list = JSON.parse(text);
  } catch (error) {
    return {
      ok: false,
      failure: { kind: 'parse', message: `verdicts are not JSON: ${(error as Error).message}` },
      raw: text,
    };
  }
  const parsed = z.array(entrySchema).safeParse(list);
  if (!parsed.success)
    return {
      ok: false,
      failure: {
        kind: 'parse',
        message: `verdicts are not a list of { verdict, reason?, output? }: ${parsed.error.issues[0]?.message}`,
      },
      raw: text,
    };
  const entry = parsed.data[sample - 1];
  if (!entry)
    return { ok: false, failure: { kind: 'no_output', message: `no repeat ${sample} of this item` } };
  if (entry.verdict === 'error')
    return {
      ok: false,
      failure: { kind: 'provider', message: entry.reason ?? 'the tool recorded an error' },
      ...(entry.output !== undefined ? { raw: entry.output } : {}),
    };
  return {
    ok: true,
    output: {
      pass: entry.verdict === 'pass',
      ...(entry.reason !== undefined ? { reason: entry.reason } : {}),
      ...(entry.output !== undefined ? { output: entry.output } : {}),
    },
  };
}

const scorers = (): Record<string, Scorer<VerdictOutput, BaseSuite>> => ({
  pass: {
    kind: 'pass',
    description: 'the verdict the tool gave',
    score: (output) => ({
      kind: 'pass',
      value: output.pass,
      ...(output.reason !== undefined ? { explanation: output.reason } : {}),
      decidedBy: 'given',
    }),
  },
});

export const verdictsFamily = defineFamily<BaseSuite, VerdictOutput>({
  name: 'verdicts',
  description:
    'Pass/fail verdicts another tool gave (promptfoo, OpenAI Evals, any grader): Assay counts them, with intervals, repeats and paired comparisons; no model is called.',

  suite: {
    shape: {},
    scoreDefaults: { backends: [] },
    outputColumns: ['verdicts', 'verdict', 'pass', 'passed', 'success'],
    goldColumns: [],
  },

  config: () => ({}),

  roles: {},

  promptPaths: () => ({}),

  // No prompt: the one set is empty.
  defaultPromptSets: () => [{}],

  parseRow(record, row, suite) {
    const cols = suite.dataset.columns;
    const id = readColumn(record, cols.id, ['id', 'idx'])?.value.trim() || undefined;
    const input = { test: readColumn(record, undefined, ['input', 'vars', 'test'])?.value ?? '' };
    return { item: { id: id ?? contentId(input), row, input } };
  },

  async solve() {
    return {
      ok: false,
      failure: {
        kind: 'no_output',
        message: 'the verdicts task scores given verdicts only: map dataset.columns.output',
      },
    };
  },

  readOutput: (given, _item, _suite, sample) => readVerdict(given, sample),

  scorers,

  primaryScorer: () => 'pass',

  outputText: (output) => output.output,

  outputLength: (output) => output.output?.length,

  simulate: () => '',
});
