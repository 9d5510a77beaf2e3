import { createHash } from 'node:crypto';
import { methodOptions, type Suite, suiteSchema } from '../../core/suite.js';
import { classificationMetrics } from '../../metrics/index.js';
import type { ParsedRow, ScoreOutcome, Task } from '../types.js';
import { judgeAgent } from './agent.js';
import { failedOutcome, gecCase } from './case.js';
import { classify } from './classify.js';
import { judgeEnsemble } from './ensemble.js';
import { judgeEscalation } from './escalation.js';
import { FUSIONS } from './fusion.js';
import { corpusPath } from './grammar.js';
import { GEC_LABELS, GOLD_COLUMNS, normalizeLabel } from './labels.js';
import { methodMetrics } from './method-metrics.js';
import { judgeModular, modularSubJudges } from './modular.js';
import type { SubJudge } from './simulate.js';

const JUDGES = ['feedback', 'edit'] as const;
const SINGLE = ['legacy', 'baseline'] as const;

/** Languages whose grammar-rule corpus ships in prompts/gec/grammar/ (a suite may add or replace). */
export const GRAMMAR_LANGUAGES = ['en', 'de', 'uk'] as const;

const COMMON = { repair: 'gec/common/repair.md', reformat: 'gec/common/repair-format.md' } as const;

function subJudgePath(judge: Suite['judge'], subJudge: SubJudge): string {
  return subJudge === 'quality' ? `gec/modular/quality-${judge}.md` : `gec/modular/${subJudge}.md`;
}

/** Prompt role → file for one method and judge: only the files the method reads. */
function methodPaths(suite: Suite): Record<string, string> {
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

function column(record: Record<string, string>, name: string | undefined, fallbacks: readonly string[]) {
  for (const key of name ? [name] : fallbacks) {
    const value = record[key];
    if (value !== undefined) return { key, value };
  }
  return undefined;
}

export const gecTask: Task = {
  name: 'gec',

  placeholders: {
    classify: ['language', 'src', 'tgt', 'aligned', 'edit'],
    repair: ['problem', 'labels'],
    reformat: ['problem', 'format'],
    nonsense: ['text', 'language'],
    meaning: ['original', 'suggested', 'language', 'aligned', 'edit'],
    quality: ['original', 'suggested', 'language', 'aligned', 'edit'],
    pair: ['original', 'suggested', 'language', 'aligned', 'edit'],
    agent: ['language', 'original', 'suggested', 'aligned', 'edit'],
    finalizer: ['language', 'src', 'tgt', 'aligned', 'edit', 'labels', 'candidates'],
    router: ['language', 'src', 'tgt', 'aligned', 'edit', 'labels'],
    grammar: null,
  },

  promptPaths(suite) {
    return { ...methodPaths(suite), ...suite.prompts };
  },

  defaultPromptSets() {
    const variants = [
      ...SINGLE.map((method) => ({ method })),
      ...FUSIONS.map((fusion) => ({ method: 'modular', modular: { fusion } })),
      { method: 'agent' },
      { method: 'escalation', escalation: { router: 'llm' } },
      { method: 'ensemble' },
    ];
    return JUDGES.flatMap((judge) =>
      variants.map((variant) =>
        methodPaths(
          suiteSchema.parse({
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

  parseRow(record, row, suite): ParsedRow {
    const cols = suite.dataset.columns;
    const idCol = column(record, cols.id, ['id', 'idx']);
    const src = column(record, cols.src, ['src'])?.value;
    const tgt = column(record, cols.tgt, ['tgt'])?.value;
    const goldCol = column(record, cols.gold, GOLD_COLUMNS);
    const id = idCol?.value.trim() || undefined;
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
    const input: Record<string, string> = {
      src,
      tgt,
      lang: column(record, cols.lang, ['lang'])?.value || suite.dataset.lang,
    };
    const aligned = column(record, cols.aligned, ['aligned'])?.value;
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

  async score(item, ctx): Promise<ScoreOutcome> {
    const c = gecCase(item, ctx, this.promptPaths(ctx.suite));
    const options = methodOptions(ctx.suite);
    switch (ctx.suite.method) {
      case 'legacy':
      case 'baseline': {
        const answer = await classify(c, 'classify', ctx.backends[0]!);
        return answer.ok
          ? { status: 'scored', prediction: answer.value.label, reason: answer.value.reason }
          : failedOutcome(answer);
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

  metrics(results, suite) {
    const pairs = results
      .filter((r) => r.gold !== undefined && r.failure?.kind !== 'invalid_row')
      .map((r) => ({ gold: r.gold!, pred: r.status === 'scored' ? r.prediction! : 'Error' }));
    return { ...classificationMetrics(pairs), method: methodMetrics(suite, results) };
  },
};
