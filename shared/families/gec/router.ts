/**
 * The escalation method's deterministic router (the escalation study's): language-agnostic risk flags
 * computed from a pair's edit spans. Pure: no I/O, no model calls. Take the spans from
 * `editSpans(src, tgt, aligned)`, which reads the `aligned` column when there is one and falls back
 * to the whole differing middle of the src/tgt pair otherwise.
 */

import type { EditSpan } from './edits.js';

export const RISK_FLAGS = [
  'number_change',
  'proper_noun_change',
  'punctuation_only',
  'structured_token_change',
  'long_rewrite_risk',
  'low_trust_label',
] as const;
export type RiskFlag = (typeof RISK_FLAGS)[number];

/** `long_rewrite_risk` fires when the spans' summed token footprint reaches this many tokens. */
export const LONG_REWRITE_TOKENS = 6;

/** Small-model labels the router does not trust on their own. */
export const LOW_TRUST_LABELS: readonly string[] = ['FP1', 'FP2', 'Error'];

/** Runs of decimal digits, in order: `3.5` → [`3`, `5`]. */
const DIGIT_RUN = /\p{Nd}+/gu;

/** A word: letters, marks and digits, joined by inner apostrophes or hyphens (`don't`, `Baden-Baden`). */
const WORD = /[\p{L}\p{M}\p{Nd}]+(?:['’-][\p{L}\p{M}\p{Nd}]+)*/gu;

/**
 * Structured tokens, in order: URLs, tokens containing `@` or `#` (mentions, e-mail addresses,
 * hashtags, `C#`), and every bracket character on its own. URLs and @/# tokens stop at whitespace
 * and brackets, so `(https://x.org)` reads as `(`, `https://x.org`, `)`.
 */
const STRUCTURED =
  /https?:\/\/[^\s()[\]{}<>]+|www\.[^\s()[\]{}<>]+|[^\s()[\]{}<>]*[@#][^\s()[\]{}<>]*|[()[\]{}<>]/giu;

/** Sentence punctuation that closes a URL or @/# token rather than belonging to it (`see x.org.`). */
const TRAILING_PUNCTUATION = /[.,;:!?…'"’”»]+$/u;

const PUNCTUATION_AND_SPACE = /[\p{P}\s]+/gu;

function digitRuns(text: string): string[] {
  return text.match(DIGIT_RUN) ?? [];
}

function capitalisedTokens(text: string): string[] {
  return (text.match(WORD) ?? []).filter((word) => /^\p{Lu}/u.test(word));
}

function structuredTokens(text: string): string[] {
  return (text.match(STRUCTURED) ?? [])
    .map((token) => (token.length > 1 ? token.replace(TRAILING_PUNCTUATION, '') : token))
    .filter((token) => token !== '');
}

function withoutPunctuation(text: string): string {
  return text.replace(PUNCTUATION_AND_SPACE, '');
}

/** Number of whitespace-separated tokens. */
function tokenCount(text: string): number {
  return text.split(/\s+/u).filter((token) => token !== '').length;
}

function sameSequence(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((value, i) => value === b[i]);
}

/** True when `extract` yields a different sequence for the old and the new side of the span. */
function differs(span: EditSpan, extract: (text: string) => string[]): boolean {
  return !sameSequence(extract(span.old), extract(span.new));
}

/**
 * The span's contribution to `long_rewrite_risk`: |len(new) − len(old)| + min(len(old), len(new)),
 * which is simply max(len(old), len(new)) — the tokens inserted or deleted plus the tokens replaced.
 */
function rewriteTokens(span: EditSpan): number {
  const oldLen = tokenCount(span.old);
  const newLen = tokenCount(span.new);
  return Math.abs(newLen - oldLen) + Math.min(oldLen, newLen);
}

const SPAN_TESTS: Record<Exclude<RiskFlag, 'low_trust_label'>, (spans: readonly EditSpan[]) => boolean> = {
  // The digit-run sequences differ in some span: `5 → 6`, `1,000 → 1000`, a number added or dropped.
  number_change: (spans) => spans.some((span) => differs(span, digitRuns)),
  // The capitalised-token sequences differ in some span. Taken literally as the flag is defined, so it
  // also fires on a sentence-initial capitalisation fix (`{the=>The}`), on any change to a
  // sentence-initial word (`{The=>This}`), and on German common nouns, which are all capitalised.
  proper_noun_change: (spans) => spans.some((span) => differs(span, capitalisedTokens)),
  // Every span changes only punctuation and/or whitespace (e.g. a comma inserted).
  punctuation_only: (spans) =>
    spans.length > 0 && spans.every((span) => withoutPunctuation(span.old) === withoutPunctuation(span.new)),
  // The URL / @ / # / bracket sequences differ in some span.
  structured_token_change: (spans) => spans.some((span) => differs(span, structuredTokens)),
  // The spans together touch at least LONG_REWRITE_TOKENS tokens.
  long_rewrite_risk: (spans) =>
    spans.reduce((total, span) => total + rewriteTokens(span), 0) >= LONG_REWRITE_TOKENS,
};

/** Flags computable from the spans alone (all but low_trust_label), in RISK_FLAGS order, each at most once. */
export function spanFlags(spans: readonly EditSpan[]): RiskFlag[] {
  return RISK_FLAGS.filter((flag) => flag !== 'low_trust_label' && SPAN_TESTS[flag](spans));
}

/** spanFlags plus low_trust_label when the small model's label is in LOW_TRUST_LABELS. */
export function riskFlags(spans: readonly EditSpan[], smallLabel: string): RiskFlag[] {
  const flags = spanFlags(spans);
  return LOW_TRUST_LABELS.includes(smallLabel) ? [...flags, 'low_trust_label'] : flags;
}
