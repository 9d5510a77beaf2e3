import { z } from 'zod';
import { commonSuiteShape } from '../../model/suite-base.js';

/**
 * Transcript cleanup, after the dictation-cleanup speed/quality study: a draft pass turns a raw
 * transcript into a candidate with the decisions it made, an audit pass returns the final text;
 * both answer strict JSON, and no repair pass is offered (the study measures each model's own
 * contract compliance).
 */

/** One decision of the draft pass: what part of the transcript it acted on, and how. */
export const decisionSpanSchema = z
  .object({
    action: z
      .enum(['remove_filler', 'resolve_repair', 'keep_literal', 'spell', 'dictionary', 'punctuate', 'other'])
      .describe(
        'remove_filler: um, uh, you know…; resolve_repair: a self-repair ("left, I mean right" → "right"); keep_literal: a phrase that looks like a filler or repair but is meant (a literal "I mean"); spell: a word spelled out or hinted resolved; dictionary: a term written as the dictionary has it; punctuate: punctuation or casing; other.',
      ),
    source: z.string().describe('The transcript text the decision is about, as it appears there.'),
    result: z.string().describe('What it became in candidate_text ("" when removed).'),
  })
  .strict();
export const decisionSpansSchema = z.array(decisionSpanSchema);
export type DecisionSpan = z.infer<typeof decisionSpanSchema>;

/** A heuristics fixture: the transcript as timed words, and rules a good cleanup follows. */
export const heuristicsFixtureSchema = z
  .object({
    words: z
      .array(z.object({ w: z.string(), startMs: z.number().min(0), endMs: z.number().min(0) }).strict())
      .min(1)
      .describe('The transcript as timed words, as a speech recogniser gives it.'),
    expected: z.string().optional().describe("The text the heuristics expect (default: the row's expected)."),
    required: z.array(z.string()).default([]).describe('Phrases the cleaned text must contain.'),
    forbidden: z.array(z.string()).default([]).describe('Phrases the cleaned text must not contain.'),
    minDecisions: z
      .number()
      .int()
      .min(0)
      .default(0)
      .describe('At least this many valid decision spans in the draft.'),
    decisions: z
      .array(decisionSpanSchema.pick({ action: true, source: true }))
      .default([])
      .describe(
        'Decisions a good draft makes (matched on action and normalised source), for precision and recall.',
      ),
  })
  .strict();
export type HeuristicsFixture = z.infer<typeof heuristicsFixtureSchema>;

export const cleanupBlock = z
  .object({
    heuristicWeight: z
      .number()
      .min(0)
      .max(1)
      .default(0.3)
      .describe(
        'w in the combined ranking (1 − w)·hybrid + w·heuristic; 0 is used when no item has a heuristics fixture.',
      ),
    longTextWords: z
      .number()
      .int()
      .positive()
      .default(150)
      .describe(
        'Transcripts of at least this many words are long text (the default gate compares latency on them).',
      ),
  })
  .strict();

export const cleanupShape = {
  cleanup: cleanupBlock.prefault({}).describe('How the cleanup is ranked.'),
};

export const cleanupColumns = {
  transcript: z.string().optional().describe('Raw transcript column (default `transcript`).'),
  expected: z
    .string()
    .optional()
    .describe('Cleaned reference column (default `expected`; `gold` works too).'),
  language: z.string().optional().describe('Language column (default `language`; else dataset.lang).'),
  dictionary: z
    .string()
    .optional()
    .describe('Dictionary terms column: a JSON list or comma-separated (default `dictionary`).'),
  tags: z
    .string()
    .optional()
    .describe('Tags column: a JSON list (i_mean:literal, i_mean:correction, spelling) (default `tags`).'),
  spellingExpected: z
    .string()
    .optional()
    .describe('The expected final token of a spelling item (default `spelling_expected`).'),
  heuristics: z.string().optional().describe('Heuristics fixture column, JSON (default `heuristics`).'),
};

export const cleanupSuiteSchema = z
  .object({ ...commonSuiteShape('cleanup', cleanupColumns), ...cleanupShape })
  .strict();
export type CleanupSuite = z.infer<typeof cleanupSuiteSchema>;

export function checkCleanupSuite(
  suite: CleanupSuite,
  issue: (path: (string | number)[], message: string) => void,
): void {
  if (suite.dataset.columns.output === undefined && suite.backends.length === 0) {
    issue(
      ['backends'],
      'needs a backend to clean with (or dataset.columns.output to score given cleaned text)',
    );
  }
}
