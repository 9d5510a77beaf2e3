/**
 * The transcript-cleanup metrics, exactly as defined for Assay (the cleanup study names them
 * without defining them). Pure functions over strings; run figures are means over items.
 *
 * - `norm(s)`: Unicode NFKC, lower case, every run of whitespace one space, trimmed.
 *   Punctuation is kept (cleanup adds and removes it).
 * - `words(s)`: `norm(s)` with every character of Unicode category P removed, split on spaces,
 *   empty strings dropped.
 * - parse_valid, exact_match, similarity, contract_compliance and hybrid per item; token F1 as
 *   in SQuAD; word error rate against the reference; `I mean` rates and spelling accuracy over
 *   the items tagged for them.
 */

import { ratio } from '../../lib/metrics/stats.js';

export function norm(s: string): string {
  return s.normalize('NFKC').toLowerCase().replace(/\s+/gu, ' ').trim();
}

export function words(s: string): string[] {
  return norm(s)
    .replace(/\p{P}/gu, '')
    .split(' ')
    .filter((w) => w !== '');
}

/** Levenshtein distance between two sequences (code points of a string, or words). */
export function levenshtein<T>(a: readonly T[], b: readonly T[]): number {
  if (a.length === 0) return b.length;
  if (b.length === 0) return a.length;
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(
        previous[j]! + 1,
        current[j - 1]! + 1,
        previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
    }
    previous = current;
  }
  return previous[b.length]!;
}

/** 1 when `norm(cleaned) == norm(expected)`; 0 otherwise, and when the answer did not parse. */
export function exactMatch(cleaned: string | undefined, expected: string): 0 | 1 {
  return cleaned !== undefined && norm(cleaned) === norm(expected) ? 1 : 0;
}

/** `1 − lev(norm(cleaned), norm(expected)) / max(len, len)` over code points; 1 when both are empty; 0 when the answer did not parse. */
export function similarity(cleaned: string | undefined, expected: string): number {
  if (cleaned === undefined) return 0;
  const a = Array.from(norm(cleaned));
  const b = Array.from(norm(expected));
  const longest = Math.max(a.length, b.length);
  return longest === 0 ? 1 : 1 - levenshtein(a, b) / longest;
}

/** SQuAD's token F1 over `words`: multiset overlap; 1 when both are empty, 0 when one is. */
export function tokenF1(cleaned: string, expected: string): number {
  const c = words(cleaned);
  const e = words(expected);
  if (c.length === 0 && e.length === 0) return 1;
  if (c.length === 0 || e.length === 0) return 0;
  const counts = new Map<string, number>();
  for (const w of e) counts.set(w, (counts.get(w) ?? 0) + 1);
  let common = 0;
  for (const w of c) {
    const left = counts.get(w) ?? 0;
    if (left > 0) {
      common += 1;
      counts.set(w, left - 1);
    }
  }
  if (common === 0) return 0;
  const precision = common / c.length;
  const recall = common / e.length;
  return (2 * precision * recall) / (precision + recall);
}

/** Word error rate: word-level Levenshtein / |words(expected)|; 0 when both are empty, null (n/a) when only the reference is. */
export function wordErrorRate(cleaned: string, expected: string): number | null {
  const e = words(expected);
  const c = words(cleaned);
  if (e.length === 0) return c.length === 0 ? 0 : null;
  return levenshtein(c, e) / e.length;
}

export interface ItemFigures {
  parseValid: 0 | 1;
  exactMatch: 0 | 1;
  similarity: number;
  contractCompliance: 0 | 1;
  tokenF1: number;
  wer: number | null;
  hybrid: number;
}

/** What the two passes gave for one item, as the metrics read it. */
export interface CleanupAnswer {
  /** Pass 2's `cleaned_text` when its answer parsed (JSON whose cleaned_text is a string). */
  cleaned?: string;
  /** Pass 1 parsed with a string `candidate_text` and valid `decision_spans`. */
  draftValid: boolean;
}

/** Every per-item figure; `hybrid = 0.40·parse_valid + 0.20·exact_match + 0.30·similarity + 0.10·contract_compliance`. */
export function itemFigures(answer: CleanupAnswer, expected: string): ItemFigures {
  const parseValid = answer.cleaned === undefined ? 0 : 1;
  const exact = exactMatch(answer.cleaned, expected);
  const sim = similarity(answer.cleaned, expected);
  const contract = parseValid === 1 && answer.cleaned!.trim() !== '' && answer.draftValid ? 1 : 0;
  return {
    parseValid,
    exactMatch: exact,
    similarity: sim,
    contractCompliance: contract,
    tokenF1: tokenF1(answer.cleaned ?? '', expected),
    wer: wordErrorRate(answer.cleaned ?? '', expected),
    hybrid: 0.4 * parseValid + 0.2 * exact + 0.3 * sim + 0.1 * contract,
  };
}

const hasBigram = (list: readonly string[], a: string, b: string) =>
  list.some((w, i) => w === a && list[i + 1] === b);

/** Whether `needle` occurs in `haystack` as a contiguous run. */
function containsRun(haystack: readonly string[], needle: readonly string[]): boolean {
  if (needle.length === 0) return false;
  for (let i = 0; i + needle.length <= haystack.length; i++) {
    if (needle.every((w, k) => haystack[i + k] === w)) return true;
  }
  return false;
}

export interface TaggedItem {
  tags: readonly string[];
  /** Pass 2's cleaned text ('' when it did not parse). */
  cleaned: string;
  spellingExpected?: string;
}

/**
 * The tagged-item counts behind {@link iMeanRates} and {@link spellingAccuracy}, added one item
 * at a time (a report keeps these counts, not the items).
 */
export class TaggedCounts {
  literal = 0;
  /** Literal `I mean`s whose bigram the cleanup removed. */
  literalRemoved = 0;
  correction = 0;
  /** Corrective `I mean`s the cleanup kept. */
  correctionKept = 0;
  spelling = 0;
  spellingRight = 0;

  add(item: TaggedItem): void {
    const isLiteral = item.tags.includes('i_mean:literal');
    const isCorrection = item.tags.includes('i_mean:correction');
    const isSpelling = item.tags.includes('spelling') && item.spellingExpected !== undefined;
    if (!isLiteral && !isCorrection && !isSpelling) return;
    const cleaned = words(item.cleaned);
    if (isLiteral) {
      this.literal += 1;
      if (!hasBigram(cleaned, 'i', 'mean')) this.literalRemoved += 1;
    }
    if (isCorrection) {
      this.correction += 1;
      if (hasBigram(cleaned, 'i', 'mean')) this.correctionKept += 1;
    }
    if (isSpelling) {
      this.spelling += 1;
      if (containsRun(cleaned, words(item.spellingExpected!))) this.spellingRight += 1;
    }
  }

  /** Appends `later`, the counts of the items that come after this one's. */
  merge(later: TaggedCounts): void {
    this.literal += later.literal;
    this.literalRemoved += later.literalRemoved;
    this.correction += later.correction;
    this.correctionKept += later.correctionKept;
    this.spelling += later.spelling;
    this.spellingRight += later.spellingRight;
  }

  iMeanRates(): { literalFalsePositiveRate: number | null; correctionFalseNegativeRate: number | null } {
    return {
      literalFalsePositiveRate: ratio(this.literalRemoved, this.literal),
      correctionFalseNegativeRate: ratio(this.correctionKept, this.correction),
    };
  }

  spellingAccuracy(): number | null {
    return ratio(this.spellingRight, this.spelling);
  }
}

const countTagged = (items: readonly TaggedItem[]) => {
  const counts = new TaggedCounts();
  for (const item of items) counts.add(item);
  return counts;
};

/**
 * `I mean` handling: of the items tagged `i_mean:literal`, the share whose cleaned words lack
 * the bigram "i mean" (a literal use removed: a false positive); of those tagged
 * `i_mean:correction`, the share that still have it (a correction not resolved: a false
 * negative). Null when no item has the tag.
 */
export function iMeanRates(items: readonly TaggedItem[]): {
  literalFalsePositiveRate: number | null;
  correctionFalseNegativeRate: number | null;
} {
  return countTagged(items).iMeanRates();
}

/** Of the items tagged `spelling`, the share whose cleaned words contain `spelling_expected` (normalised, punctuation removed). */
export function spellingAccuracy(items: readonly TaggedItem[]): number | null {
  return countTagged(items).spellingAccuracy();
}

/** Words a cleanup removes as fillers. */
export const FILLERS: ReadonlySet<string> = new Set([
  'um',
  'uh',
  'er',
  'erm',
  'ah',
  'hmm',
  'mm',
  'like',
  'you',
  'know',
  'basically',
  'actually',
  'so',
  'well',
]);
/** Phrases that mark a self-repair: what comes before them is replaced by what comes after. */
const REPAIR_MARKERS: readonly (readonly string[])[] = [
  ['i', 'mean'],
  ['no', 'wait'],
  ['or', 'rather'],
  ['sorry'],
  ['scratch', 'that'],
];

export interface EditCounts {
  /** Runs of removed words that are all fillers (um, uh, you know…). */
  fillerRemoved: number;
  /** Runs of removed words that hold a repair marker (I mean, no wait, or rather, sorry, scratch that): a self-repair resolved. */
  selfRepairResolved: number;
  /** Everything else: words added, words replaced, removed runs of content words. */
  contentChanged: number;
}

type Op = { kind: 'keep' | 'delete' | 'insert' | 'substitute'; at: number };

/** The word-level edit script from `a` to `b` (deletions preferred on ties, so removals read as removals). */
function editScript(a: readonly string[], b: readonly string[]): Op[] {
  const d = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      d[i]![j] = Math.min(
        d[i - 1]![j]! + 1,
        d[i]![j - 1]! + 1,
        d[i - 1]![j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
    }
  }
  const ops: Op[] = [];
  let i = a.length;
  let j = b.length;
  while (i > 0 || j > 0) {
    if (i > 0 && j > 0 && a[i - 1] === b[j - 1] && d[i]![j] === d[i - 1]![j - 1]) {
      ops.push({ kind: 'keep', at: --i });
      j -= 1;
    } else if (i > 0 && d[i]![j] === d[i - 1]![j]! + 1) ops.push({ kind: 'delete', at: --i });
    else if (j > 0 && d[i]![j] === d[i]![j - 1]! + 1) ops.push({ kind: 'insert', at: --j });
    else {
      ops.push({ kind: 'substitute', at: --i });
      j -= 1;
    }
  }
  return ops.reverse();
}

/**
 * The edits a cleanup made to a transcript, by kind: each run of removed words is a filler
 * removal when every word is a filler, a self-repair when it holds a repair marker,
 * else a content change; every added or replaced word is a content change. Content changes
 * are what users of a cleanup fear most.
 */
export function classifyEdits(transcript: string, cleaned: string): EditCounts {
  const source = words(transcript);
  const ops = editScript(source, words(cleaned));
  const counts: EditCounts = { fillerRemoved: 0, selfRepairResolved: 0, contentChanged: 0 };
  let run: number[] = [];
  const closeRun = () => {
    if (run.length === 0) return;
    const removed = run.map((k) => source[k]!);
    if (removed.every((w) => FILLERS.has(w))) counts.fillerRemoved += 1;
    else if (REPAIR_MARKERS.some((marker) => containsRun(removed, marker))) counts.selfRepairResolved += 1;
    else counts.contentChanged += 1;
    run = [];
  };
  for (const op of ops) {
    if (op.kind === 'delete') {
      run.push(op.at);
      continue;
    }
    closeRun();
    if (op.kind !== 'keep') counts.contentChanged += 1;
  }
  closeRun();
  return counts;
}

export interface HeuristicInput {
  fixture: {
    expected?: string;
    required: readonly string[];
    forbidden: readonly string[];
    minDecisions: number;
    decisions: readonly { action: string; source: string }[];
  };
  /** The row's expected text (used when the fixture has none). */
  expected: string;
  /** Pass 2's cleaned text ('' when it did not parse). */
  cleaned: string;
  /** The draft's valid decision spans (none when pass 1 did not parse). */
  decisions: readonly { action: string; source: string }[];
}

export interface HeuristicFigures {
  exactMatch: 0 | 1;
  tokenF1: number;
  /** Share of the rules met: each required phrase present, each forbidden one absent, the minimum decisions made; 1 with no rules. */
  ruleMatch: number;
  /** Expected decisions the draft made (action and normalised source), over the decisions it made / the ones expected. */
  decisionsMatched: number;
  decisionsMade: number;
  decisionsExpected: number;
  /** 0.5·exact + 0.3·token_f1 + 0.2·rule_match. */
  combined: number;
}

const contains = (text: string, phrase: string) =>
  ` ${words(text).join(' ')} `.includes(` ${words(phrase).join(' ')} `);

/** One item against its heuristics fixture. */
export function heuristicFigures(input: HeuristicInput): HeuristicFigures {
  const { fixture, cleaned } = input;
  const expected = fixture.expected ?? input.expected;
  const exact = exactMatch(cleaned, expected);
  const f1 = tokenF1(cleaned, expected);
  const rules = [
    ...fixture.required.map((p) => contains(cleaned, p)),
    ...fixture.forbidden.map((p) => !contains(cleaned, p)),
    ...(fixture.minDecisions > 0 ? [input.decisions.length >= fixture.minDecisions] : []),
  ];
  const ruleMatch = rules.length === 0 ? 1 : rules.filter(Boolean).length / rules.length;
  const key = (d: { action: string; source: string }) => `${d.action}\u0000${words(d.source).join(' ')}`;
  const wanted = new Map<string, number>();
  for (const d of fixture.decisions) wanted.set(key(d), (wanted.get(key(d)) ?? 0) + 1);
  let matched = 0;
  for (const d of input.decisions) {
    const left = wanted.get(key(d)) ?? 0;
    if (left > 0) {
      matched += 1;
      wanted.set(key(d), left - 1);
    }
  }
  return {
    exactMatch: exact,
    tokenF1: f1,
    ruleMatch,
    decisionsMatched: matched,
    decisionsMade: input.decisions.length,
    decisionsExpected: fixture.decisions.length,
    combined: 0.5 * exact + 0.3 * f1 + 0.2 * ruleMatch,
  };
}
