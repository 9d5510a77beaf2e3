/** Every label a GEC gold file may carry. */
export const GEC_LABELS = ['TP', 'FP1', 'FP2', 'FP3', 'TN', 'FN'] as const;
export type GecLabel = (typeof GEC_LABELS)[number];

/** The GEC judge kinds: `feedback` judges a suggested edit with its feedback, `edit` a sentence pair. */
export const GEC_JUDGES = ['feedback', 'edit'] as const;
export type GecJudge = (typeof GEC_JUDGES)[number];

/** What each judge kind may answer: the feedback judge sees an edit, so it has no TN/FN. */
export const JUDGE_LABELS: Record<GecJudge, readonly GecLabel[]> = {
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

/** A language code (`en`, `pt-BR`, `ua`) or a known language name: never free text. */
export function isLanguageCode(value: string): boolean {
  const wanted = value.trim().toLowerCase();
  return (
    /^[a-z]{2,3}(?:[-_][a-z0-9]{2,8})*$/.test(wanted) ||
    Object.values(LANGUAGE_NAMES).some((name) => name.toLowerCase() === wanted)
  );
}

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
