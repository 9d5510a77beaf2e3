import type { Suite } from '../../core/suite.js';

/** Every label a GEC gold file may carry. */
export const GEC_LABELS = ['TP', 'FP1', 'FP2', 'FP3', 'TN', 'FN'] as const;
export type GecLabel = (typeof GEC_LABELS)[number];

/** What each judge kind may answer: the feedback judge sees an edit, so it has no TN/FN. */
export const JUDGE_LABELS: Record<Suite['judge'], readonly GecLabel[]> = {
  feedback: ['TP', 'FP1', 'FP2', 'FP3'],
  edit: GEC_LABELS,
};

/** Gold columns tried in order when the suite names none (the AQUA layouts). */
export const GOLD_COLUMNS = ['gold', 'label', 'tp_fp_label', 'judge_label', 'pred_specialized'] as const;

const LANGUAGE_NAMES: Record<string, string> = {
  en: 'English',
  de: 'German',
  ua: 'Ukrainian',
  uk: 'Ukrainian',
  es: 'Spanish',
  fr: 'French',
  it: 'Italian',
  pt: 'Portuguese',
  pl: 'Polish',
  nl: 'Dutch',
};

export function languageName(code: string): string {
  return LANGUAGE_NAMES[code.trim().toLowerCase()] ?? code;
}

/** Canonical label for a gold or predicted value (`' fp3 '` → `FP3`), or undefined. */
export function normalizeLabel(value: string | undefined): GecLabel | undefined {
  const upper = value?.trim().toUpperCase();
  return GEC_LABELS.find((label) => label === upper);
}

/** A language code for a code or a name the model wrote (`German` → `de`); unknown input unchanged. */
export function languageCode(value: string): string {
  const wanted = value.trim().toLowerCase();
  const byName = Object.entries(LANGUAGE_NAMES).find(([, name]) => name.toLowerCase() === wanted);
  return byName ? byName[0] : wanted;
}
