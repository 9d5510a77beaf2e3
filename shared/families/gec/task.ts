import { createHash } from 'node:crypto';
import { readColumn } from '../../family/rows.js';
import { defineFamily, type Solved } from '../../family/types.js';
import { judgeAgent } from './agent.js';
import { gecCase } from './case.js';
import { classify } from './classify.js';
import { judgeEnsemble } from './ensemble.js';
import { judgeEscalation } from './escalation.js';
import { FUSIONS } from './fusion.js';
import { corpusPath } from './grammar.js';
import { GEC_LABELS, GOLD_COLUMNS, isLanguageCode, normalizeLabel } from './labels.js';
import { GecReportTally, type GecTallyState, LABEL_SCORER } from './method-metrics.js';
import { judgeModular, modularSubJudges } from './modular.js';
import type { GecOutput } from './output.js';
import { renderMethod } from './report.js';
import { type SubJudge, simulateGec } from './simulate.js';
import {
  checkGecSuite,
  type GecSuite,
  gecColumns,
  gecShape,
  gecSuiteSchema,
  methodOptions,
  SINGLE_PROMPT_METHODS,
} from './suite.js';

const JUDGES = ['feedback', 'edit'] as const;

/** Languages whose grammar-rule corpus ships in prompts/gec/grammar/ (a suite may add or replace). */
export const GRAMMAR_LANGUAGES = ['en', 'de', 'uk'] as const;

const COMMON = { repair: 'gec/common/repair.md', reformat: 'gec/common/repair-format.md' } as const;

function subJudgePath(judge: GecSuite['judge'], subJudge: SubJudge): string {
  return subJudge === 'quality' ? `gec/modular/quality-${judge}.md` : `gec/modular/${subJudge}.md`;
}

/** Prompt role → file for one method and judge: only the files the method reads. */
function methodPaths(suite: GecSuite): Record<string, string> {
  const { judge } = suite;
  const options = methodOptions(suite);
  const subJudges = (list: SubJudge[]) => Object.fromEntries(list.map((j) => [j, subJudgePath(judge, j)]));
  switch (suite.method) {
    case 'legacy':
    case 'baseline':
      return { classify: `gec/${judge}/${suite.method}.md`, repair: COMMON.repair };
    case 'modular':
      return { ...subJudges(modularSubJudges(judge, options.modular)), reformat: COMMON.reformat };
    case 'agent':
      return {
        agent: `gec/agent/${judge}.md`,
        ...subJudges(['nonsense', 'meaning', 'quality']),
        reformat: COMMON.reformat,
        ...Object.fromEntries(GRAMMAR_LANGUAGES.map((lang) => [`grammar.${lang}`, corpusPath(lang)])),
      };
    case 'escalation':
      return {
        classify: `gec/${judge}/${options.escalation.base}.md`,
        repair: COMMON.repair,
        finalizer: 'gec/escalation/finalizer.md',
        ...(options.escalation.router === 'llm' ? { router: 'gec/escalation/router.md' } : {}),
      };
    case 'ensemble':
      return { classify: `gec/${judge}/${options.ensemble.base}.md`, repair: COMMON.repair };
  }
}

/** Placeholders of the sub-judge prompts; all but the language carry dataset text. */
const SUB_JUDGE_ROLE = {
  placeholders: ['original', 'suggested', 'language', 'aligned', 'edit'],
  data: ['original', 'suggested', 'aligned', 'edit'],
};

/**
 * GEC judges (the AQUA project's methods): the output under evaluation is the judge's label of
 * an edit, scored against the gold label with the AQUA classification metrics.
 */
export const gecFamily = defineFamily<GecSuite, GecOutput>({
  name: 'gec',
  description: 'GEC judges: label a grammar-correction edit TP/FP1/FP2/FP3 (TN/FN for the edit judge).',

  suite: {
    shape: gecShape,
    columns: gecColumns,
    check: checkGecSuite,
    scoreDefaults: { judge: 'edit', method: 'baseline' },
    // Other tools' names first, then the gold file layouts (a gold file scored against itself).
    outputColumns: ['pred', 'prediction', 'judge_label', 'pred_specialized', ...GOLD_COLUMNS],
    goldColumns: GOLD_COLUMNS,
  },

  config: (suite) => ({ judge: suite.judge, method: suite.method }),

  roles: {
    classify: {
      placeholders: ['language', 'src', 'tgt', 'aligned', 'edit'],
      data: ['src', 'tgt', 'aligned', 'edit'],
    },
    repair: { placeholders: ['problem', 'labels'], data: ['problem'] },
    reformat: { placeholders: ['problem', 'format'], data: ['problem'] },
    nonsense: { placeholders: ['text', 'language'], data: ['text'] },
    meaning: SUB_JUDGE_ROLE,
    quality: SUB_JUDGE_ROLE,
    pair: SUB_JUDGE_ROLE,
    agent: SUB_JUDGE_ROLE,
    finalizer: {
      placeholders: ['language', 'src', 'tgt', 'aligned', 'edit', 'labels', 'candidates'],
      data: ['src', 'tgt', 'aligned', 'edit', 'candidates'],
    },
    router: {
      placeholders: ['language', 'src', 'tgt', 'aligned', 'edit', 'labels'],
      data: ['src', 'tgt', 'aligned', 'edit'],
    },
    grammar: { placeholders: null },
  },

  promptPaths(suite) {
    return { ...methodPaths(suite), ...suite.prompts };
  },

  defaultPromptSets() {
    const variants = [
      ...SINGLE_PROMPT_METHODS.map((method) => ({ method })),
      ...FUSIONS.map((fusion) => ({ method: 'modular', modular: { fusion } })),
      { method: 'agent' },
      { method: 'escalation', escalation: { router: 'llm' } },
      { method: 'ensemble' },
    ];
    return JUDGES.flatMap((judge) =>
      variants.map((variant) =>
        methodPaths(
          gecSuiteSchema.parse({
            version: 1,
            name: 'defaults',
            dataset: { path: 'x.csv' },
            task: 'gec',
            judge,
            backends: ['sim:a', 'sim:b'],
            ...variant,
          }),
        ),
      ),
    );
  },

  parseRow(record, row, suite) {
    const cols = suite.dataset.columns;
    const id = readColumn(record, cols.id, ['id', 'idx'])?.value.trim() || undefined;
    const src = readColumn(record, cols.src, ['src'])?.value;
    const tgt = readColumn(record, cols.tgt, ['tgt'])?.value;
    const goldCol = readColumn(record, cols.gold, GOLD_COLUMNS);
    const missing = [
      src === undefined && (cols.src ?? 'src'),
      tgt === undefined && (cols.tgt ?? 'tgt'),
      goldCol === undefined && (cols.gold ?? GOLD_COLUMNS.join('|')),
    ].filter(Boolean);
    if (missing.length > 0 || src === undefined || tgt === undefined || goldCol === undefined) {
      return { id, error: `missing column ${missing.join(', ')}` };
    }
    const gold = normalizeLabel(goldCol.value);
    if (!gold) {
      return {
        id,
        error: `unknown gold label ${JSON.stringify(goldCol.value)} in ${goldCol.key} (expected ${GEC_LABELS.join('/')})`,
      };
    }
    const tooLong = [src, tgt].some((v) => v.length > suite.dataset.maxFieldChars);
    if (tooLong) return { id, error: `field longer than ${suite.dataset.maxFieldChars} characters` };
    if (src.trim() === '') return { id, error: 'empty src' };
    const lang = readColumn(record, cols.lang, ['lang'])?.value.trim() || suite.dataset.lang;
    // The language is written into prompts as is: it must be a code, never free text.
    if (!isLanguageCode(lang)) return { id, error: `lang ${JSON.stringify(lang)} is not a language code` };
    const input: Record<string, string> = { src, tgt, lang };
    const aligned = readColumn(record, cols.aligned, ['aligned'])?.value;
    if (aligned) input.aligned = aligned;
    return {
      item: {
        id: id ?? createHash('sha256').update(`${src}\u0000${tgt}`).digest('hex').slice(0, 16),
        row,
        input,
        gold,
      },
    };
  },

  async solve(item, ctx): Promise<Solved<GecOutput>> {
    const c = gecCase(item, ctx);
    const options = methodOptions(ctx.suite);
    switch (ctx.suite.method) {
      case 'legacy':
      case 'baseline': {
        const backend = ctx.backends[0]!;
        const answer = await classify(c, 'classify', backend);
        return answer.ok
          ? { ok: true, output: { ...answer.value, decidedBy: backend.id } }
          : { ok: false, failure: answer.failure, raw: answer.raw };
      }
      case 'modular':
        return judgeModular(c, options.modular);
      case 'agent':
        return judgeAgent(c, options.agent);
      case 'escalation':
        return judgeEscalation(c, options.escalation);
      case 'ensemble':
        return judgeEnsemble(c, options.ensemble);
    }
  },

  readOutput(given, _item, suite) {
    if (given.output === undefined) {
      return { ok: false, failure: { kind: 'no_output', message: 'no label given for this item' } };
    }
    const label = normalizeLabel(given.output);
    if (!label) {
      return {
        ok: false,
        failure: { kind: 'parse', message: `given label ${JSON.stringify(given.output)} is not a label` },
      };
    }
    return {
      ok: true,
      output: {
        label,
        reason: given.explanation ?? '',
        decidedBy: `given (${suite.dataset.columns.output})`,
      },
    };
  },

  scorers: () => ({
    [LABEL_SCORER]: {
      kind: 'label',
      description: "the judge's label against the gold label (AQUA metrics)",
      score: (output) => ({
        kind: 'label',
        value: output.label,
        explanation: output.reason,
        decidedBy: output.decidedBy,
      }),
      target: (item) => item.gold,
      metrics: { positive: ['TP', 'TN'] },
    },
  }),

  primaryScorer: () => LABEL_SCORER,

  // The output is the label and its reason: the score shows both.
  outputText: () => undefined,

  simulate: simulateGec,

  reportTally: (suite, state) => new GecReportTally(suite, state as GecTallyState | undefined),

  reportText: (report) => renderMethod(report),
});
