import type { TaskContext } from '../../family/types.js';
import type { Item } from '../../model/model.js';
import { alignedText, type EditSpan, editSpans, formatSpans } from './edits.js';
import { type GecLabel, JUDGE_LABELS, languageName, normalizeLabel } from './labels.js';
import type { GecSuite } from './suite.js';

/** One GEC item as every method sees it: the pair, its edit spans, and the prompt variables. */
export interface GecCase {
  item: Item;
  ctx: TaskContext<GecSuite>;
  labels: readonly GecLabel[];
  gold?: GecLabel;
  lang: string;
  spans: EditSpan[];
  /** Every placeholder any GEC prompt may use (the AQUA project's names and ours). */
  vars: Record<string, string>;
}

export function gecCase(item: Item, ctx: TaskContext<GecSuite>): GecCase {
  const { src = '', tgt = '', aligned, lang = ctx.suite.dataset.lang } = item.input;
  const spans = editSpans(src, tgt, aligned);
  const language = languageName(lang);
  const alignedSentence = alignedText(src, tgt, aligned);
  const labels = JUDGE_LABELS[ctx.suite.judge];
  return {
    item,
    ctx,
    labels,
    gold: normalizeLabel(item.gold),
    lang,
    spans,
    vars: {
      language,
      src,
      tgt,
      original: src,
      suggested: tgt,
      text: tgt,
      aligned: alignedSentence,
      edit: formatSpans(spans),
      labels: labels.map((l) => `"${l}"`).join(' | '),
    },
  };
}

/** The text of a prompt role, rendered with the case's variables (plus `extra`). */
export function render(c: GecCase, role: string, extra: Record<string, string> = {}): string {
  return c.ctx.render(role, { ...c.vars, ...extra });
}
