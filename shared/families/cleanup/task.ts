import { baseRequest } from '../../family/ask.js';
import { contentId, readColumn } from '../../family/rows.js';
import { defineFamily, type Scorer, type Solved } from '../../family/types.js';
import type { Item, Score } from '../../model/model.js';
import { type ItemFigures, itemFigures } from './metrics.js';
import type { CleanupOutput } from './output.js';
import { CleanupTally, type CleanupTallyState, cleanupReportText } from './report.js';
import { type CleanupHint, simulateCleanup } from './simulate.js';
import {
  type CleanupSuite,
  checkCleanupSuite,
  cleanupColumns,
  cleanupShape,
  decisionSpansSchema,
  heuristicsFixtureSchema,
} from './suite.js';

const PATHS = {
  'draft.system': 'cleanup/draft-system.md',
  draft: 'cleanup/draft.md',
  'audit.system': 'cleanup/audit-system.md',
  audit: 'cleanup/audit.md',
};

/** A JSON list in a cell (`["a","b"]`), else comma-separated values; [] when empty. */
function list(value: string | undefined): string[] | { error: string } {
  const text = value?.trim() ?? '';
  if (text === '') return [];
  if (text.startsWith('[')) {
    try {
      const parsed: unknown = JSON.parse(text);
      if (Array.isArray(parsed) && parsed.every((v) => typeof v === 'string')) return parsed;
    } catch {
      // reported below
    }
    return { error: `${JSON.stringify(text.slice(0, 60))} is not a JSON list of strings` };
  }
  return text
    .split(',')
    .map((t) => t.trim())
    .filter(Boolean);
}

/**
 * The answer as the model returned it, parsed strictly: the whole text is one JSON object (a
 * code fence around it is allowed). No extraction from prose: the study measures the model's
 * own contract compliance.
 */
export function strictJson(text: string): Record<string, unknown> | undefined {
  const trimmed = text.trim();
  const fenced = /^```(?:json)?\s*([\s\S]*?)\s*```$/i.exec(trimmed);
  try {
    const value: unknown = JSON.parse(fenced ? fenced[1]! : trimmed);
    return value && typeof value === 'object' && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

/** Each output's figures against its gold, worked out once for all the scorers that read them. */
const figured = new WeakMap<CleanupOutput, { gold: string; figures: ItemFigures }>();

/**
 * The item's figures, which every scorer reads one of: the similarity alone is an edit
 * distance over the texts' characters, so it is computed once an output, not once a scorer.
 */
function figuresOf(output: CleanupOutput, item: Item): ItemFigures {
  const gold = item.gold ?? '';
  const known = figured.get(output);
  if (known && known.gold === gold) return known.figures;
  const figures = itemFigures(output, gold);
  figured.set(output, { gold, figures });
  return figures;
}

const number = (value: number, explanation?: string): Score => ({
  kind: 'number',
  value,
  ...(explanation ? { explanation } : {}),
});
const pass = (value: boolean, explanation?: string): Score => ({
  kind: 'pass',
  value,
  ...(explanation ? { explanation } : {}),
});

function scorers(): Record<string, Scorer<CleanupOutput, CleanupSuite>> {
  const why = (o: CleanupOutput) => (o.problems.length > 0 ? o.problems.join('; ') : undefined);
  return {
    hybrid: {
      kind: 'number',
      description: '0.40·parse_valid + 0.20·exact_match + 0.30·similarity + 0.10·contract_compliance',
      score: (o, item) => number(figuresOf(o, item).hybrid, why(o)),
    },
    parse_valid: {
      kind: 'pass',
      description: "pass 2's answer is JSON (a code fence allowed) whose cleaned_text is a string",
      score: (o, item) => pass(figuresOf(o, item).parseValid === 1, why(o)),
    },
    exact_match: {
      kind: 'pass',
      description: 'norm(cleaned) == norm(expected)',
      score: (o, item) => pass(figuresOf(o, item).exactMatch === 1),
    },
    similarity: {
      kind: 'number',
      description: '1 − Levenshtein(norm(cleaned), norm(expected)) / the longer length',
      score: (o, item) => number(figuresOf(o, item).similarity),
    },
    contract_compliance: {
      kind: 'pass',
      description: 'parse_valid, a non-empty cleaned_text, and pass 1 parsed with its decision_spans valid',
      score: (o, item) => pass(figuresOf(o, item).contractCompliance === 1, why(o)),
    },
    token_f1: {
      kind: 'number',
      description: "SQuAD's token F1 of the cleaned words against the expected words",
      score: (o, item) => number(figuresOf(o, item).tokenF1),
    },
    wer: {
      kind: 'number',
      description: 'word error rate of the cleaned text against the expected text (lower is better)',
      score: (o, item) => {
        const wer = figuresOf(o, item).wer;
        return wer === null
          ? {
              kind: 'number',
              unscored: { kind: 'no_output', message: 'the expected text has no words: WER is n/a' },
            }
          : number(wer);
      },
    },
  };
}

/**
 * Transcript cleanup (`task: "cleanup"`), after the dictation-cleanup speed/quality study: a
 * draft pass and an audit pass, both strict JSON with no repair pass, scored by the study's
 * metrics and Assay's (word error rate, edits by kind).
 */
export const cleanupFamily = defineFamily<CleanupSuite, CleanupOutput>({
  name: 'cleanup',
  description:
    'Dictation transcript cleanup in two passes (draft with its decisions, then audit), scored against the cleaned reference.',

  suite: {
    shape: cleanupShape,
    columns: cleanupColumns,
    check: checkCleanupSuite,
    // A heuristics fixture, the dictionary and the tags may be JSON in the row itself.
    jsonColumns: ['heuristics', 'dictionary', 'tags'],
  },

  config: () => ({ passes: 'draft+audit' }),

  roles: {
    draft: {
      placeholders: ['language', 'transcript', 'dictionary'],
      data: ['language', 'transcript', 'dictionary'],
    },
    audit: {
      placeholders: ['language', 'transcript', 'dictionary', 'candidate'],
      data: ['language', 'transcript', 'dictionary', 'candidate'],
    },
  },

  promptPaths: (suite) => ({ ...PATHS, ...suite.prompts }),

  defaultPromptSets: () => [PATHS],

  schemas: { 'decision-spans': decisionSpansSchema, heuristics: heuristicsFixtureSchema },

  defaultGate: (suite) => ({
    conditions: [
      'parse_valid.passRate >= 0.99',
      'hybrid.mean >= baseline - 0.08',
      // Outputs the dataset gives were timed by nothing: there is no latency to compare.
      ...(suite.dataset.columns.output === undefined
        ? [`p50 latency where words(transcript) >= ${suite.cleanup.longTextWords} < baseline`]
        : []),
    ],
    required: false,
  }),

  parseRow(record, row, suite) {
    const cols = suite.dataset.columns;
    const id = readColumn(record, cols.id, ['id', 'idx'])?.value.trim() || undefined;
    const fixtureText = readColumn(record, cols.heuristics, ['heuristics'])?.value.trim();
    let fixture: ReturnType<typeof heuristicsFixtureSchema.parse> | undefined;
    if (fixtureText) {
      let json: unknown;
      try {
        json = JSON.parse(fixtureText);
      } catch {
        return { id, error: 'heuristics is not JSON' };
      }
      const parsed = heuristicsFixtureSchema.safeParse(json);
      if (!parsed.success)
        return {
          id,
          error: `heuristics: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
        };
      fixture = parsed.data;
    }
    const transcript =
      readColumn(record, cols.transcript, ['transcript'])?.value ?? fixture?.words.map((w) => w.w).join(' ');
    if (transcript === undefined) return { id, error: `missing column ${cols.transcript ?? 'transcript'}` };
    const expected = readColumn(record, cols.expected ?? cols.gold, ['expected', 'gold'])?.value;
    if (expected === undefined) return { id, error: `missing column ${cols.expected ?? 'expected'}` };
    const dictionary = list(readColumn(record, cols.dictionary, ['dictionary'])?.value);
    if ('error' in dictionary) return { id, error: `dictionary: ${dictionary.error}` };
    const tags = list(readColumn(record, cols.tags, ['tags'])?.value);
    if ('error' in tags) return { id, error: `tags: ${tags.error}` };
    const spelling = readColumn(record, cols.spellingExpected, ['spelling_expected'])?.value.trim();
    if (tags.includes('spelling') && !spelling)
      return { id, error: 'tagged spelling without spelling_expected' };
    const input: Record<string, string> = {
      transcript,
      language: readColumn(record, cols.language, ['language'])?.value.trim() || suite.dataset.lang,
      dictionary: dictionary.join(', '),
      tags: JSON.stringify(tags),
    };
    if (spelling) input.spelling_expected = spelling;
    if (fixture) input.heuristics = JSON.stringify(fixture);
    if (Object.values(input).some((v) => v.length > suite.dataset.maxFieldChars))
      return { id, error: `field longer than ${suite.dataset.maxFieldChars} characters` };
    return { item: { id: id ?? contentId(input), row, input, gold: expected } };
  },

  async solve(item, ctx): Promise<Solved<CleanupOutput>> {
    const backend = ctx.backends[0]!;
    const vars = {
      language: item.input.language!,
      transcript: item.input.transcript!,
      dictionary: item.input.dictionary || '(none)',
    };
    const base = {
      family: 'cleanup',
      item: item.id,
      transcript: vars.transcript,
      expected: item.gold ?? '',
    } as const;
    const problems: string[] = [];

    const draftHint: CleanupHint = { ...base, stage: 'draft' };
    const draft = await ctx.call('draft', backend, {
      ...baseRequest(ctx, backend, ctx.render('draft', vars), { system: ctx.render('draft.system', {}) }),
      simulation: draftHint,
    });
    const draftJson = strictJson(draft.text);
    const spans = decisionSpansSchema.safeParse(draftJson?.decision_spans);
    const candidate = typeof draftJson?.candidate_text === 'string' ? draftJson.candidate_text : undefined;
    const draftValid = candidate !== undefined && spans.success;
    if (!draftJson) problems.push(`pass 1: not a JSON object (${draft.finishReason})`);
    else if (candidate === undefined) problems.push('pass 1: candidate_text is not a string');
    else if (!spans.success) problems.push('pass 1: decision_spans do not match their schema');

    // With no usable draft, the audit works from the transcript itself.
    const auditCandidate = candidate ?? vars.transcript;
    const auditHint: CleanupHint = { ...base, stage: 'audit', candidate: auditCandidate };
    const audit = await ctx.call('audit', backend, {
      ...baseRequest(ctx, backend, ctx.render('audit', { ...vars, candidate: auditCandidate }), {
        system: ctx.render('audit.system', {}),
      }),
      simulation: auditHint,
    });
    const auditJson = strictJson(audit.text);
    const cleaned = typeof auditJson?.cleaned_text === 'string' ? auditJson.cleaned_text : undefined;
    if (!auditJson) problems.push(`pass 2: not a JSON object (${audit.finishReason})`);
    else if (cleaned === undefined) problems.push('pass 2: cleaned_text is missing or not a string');

    const output: CleanupOutput = {
      decisions: spans.success ? spans.data : [],
      draftValid,
      problems,
      ...(cleaned !== undefined ? { cleaned } : {}),
      ...(candidate !== undefined ? { candidate } : {}),
    };
    // Every item is scored, a broken contract with zeros: the raw answers stay for errors.txt.
    return {
      ok: true,
      output,
      ...(problems.length > 0 ? { details: { draftRaw: draft.text, auditRaw: audit.text } } : {}),
    };
  },

  readOutput: (given) =>
    given.output === undefined
      ? { ok: false, failure: { kind: 'no_output', message: 'no cleaned text given for this item' } }
      : // Text made elsewhere has no draft pass: the contract is judged on the text alone.
        { ok: true, output: { cleaned: given.output, decisions: [], draftValid: true, problems: [] } },

  scorers,

  primaryScorer: () => 'hybrid',

  outputText: (output) => output.cleaned,

  outputLength: (output) => output.cleaned?.length,

  simulate: simulateCleanup,

  reportTally: (suite, state) => new CleanupTally(suite, state as CleanupTallyState | undefined),

  reportText: cleanupReportText,
});
