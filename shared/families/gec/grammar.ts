/**
 * The grammar-rule corpus behind the agent's `grammar_rag(text, language)` tool: one markdown file
 * per language (`prompts/gec/grammar/<lang>.md`, one rule per `## Title` section) searched with
 * Okapi BM25. Pure functions only; reading the file and memoising indexes is the caller's job.
 */
import { InputError } from '../../model/errors.js';

export interface GrammarRule {
  /** Slug of the title, unique within the corpus (`-2`, `-3` on duplicates). */
  id: string;
  title: string;
  /** The section body without its heading. */
  text: string;
}

export class GrammarCorpusError extends InputError {
  override name = 'GrammarCorpusError';
}

const HEADING = /^##(?!#)[ \t]*(.*?)[ \t]*#*[ \t]*$/;

/**
 * Parses `## Title` sections (text before the first one is ignored). A corpus with no rules, or a
 * rule with an empty title or body, throws GrammarCorpusError naming `source` and the title.
 */
export function parseGrammarCorpus(markdown: string, source: string): GrammarRule[] {
  const sections: { title: string; lines: string[] }[] = [];
  for (const line of markdown.replace(/^\uFEFF/, '').split(/\r?\n/)) {
    const heading = HEADING.exec(line);
    if (heading) sections.push({ title: heading[1]!.trim(), lines: [] });
    else sections.at(-1)?.lines.push(line);
  }
  if (sections.length === 0) throw new GrammarCorpusError(`${source}: no rules (no "## Title" sections)`);
  const seen = new Map<string, number>();
  return sections.map(({ title, lines }, i) => {
    if (title === '') throw new GrammarCorpusError(`${source}: rule ${i + 1} has an empty title`);
    const text = lines.join('\n').trim();
    if (text === '') throw new GrammarCorpusError(`${source}: rule "${title}" has an empty body`);
    const base = slug(title);
    const count = (seen.get(base) ?? 0) + 1;
    seen.set(base, count);
    return { id: count === 1 ? base : `${base}-${count}`, title, text };
  });
}

function slug(title: string): string {
  const s = title
    .normalize('NFC')
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}]+/gu, '-')
    .replace(/^-+|-+$/g, '');
  return s === '' ? 'rule' : s;
}

// A run of letters/marks/digits; an apostrophe (' ’ ʼ) joins two runs only between letters.
const TOKEN = /[\p{L}\p{M}\p{N}]+(?:(?<=\p{L}\p{M}*)['’ʼ](?=\p{L})[\p{L}\p{M}\p{N}]+)*/gu;

/**
 * Lower-cased NFC word tokens. Apostrophes inside words are kept and normalised to `'`, so
 * Ukrainian м'ясо, м’ясо and мʼясо are one and the same token; punctuation is dropped.
 */
export function tokenize(text: string): string[] {
  return Array.from(text.normalize('NFC').toLowerCase().matchAll(TOKEN), (m) => m[0].replace(/[’ʼ]/g, "'"));
}

export interface Bm25Hit {
  rule: GrammarRule;
  score: number;
}

/** Okapi BM25 over the title and text of each rule; idf = ln(1 + (N − n + 0.5) / (n + 0.5)). */
export class Bm25Index {
  private readonly rules: readonly GrammarRule[];
  private readonly k1: number;
  private readonly b: number;
  private readonly termFreqs: Map<string, number>[];
  private readonly lengths: number[];
  private readonly avgLength: number;
  private readonly docFreq = new Map<string, number>();

  constructor(rules: readonly GrammarRule[], options: { k1?: number; b?: number } = {}) {
    this.rules = rules;
    this.k1 = options.k1 ?? 1.2;
    this.b = options.b ?? 0.75;
    this.termFreqs = rules.map((rule) => {
      const tf = new Map<string, number>();
      for (const token of tokenize(`${rule.title}\n${rule.text}`)) tf.set(token, (tf.get(token) ?? 0) + 1);
      for (const term of tf.keys()) this.docFreq.set(term, (this.docFreq.get(term) ?? 0) + 1);
      return tf;
    });
    this.lengths = this.termFreqs.map((tf) => Array.from(tf.values()).reduce((a, n) => a + n, 0));
    const total = this.lengths.reduce((a, n) => a + n, 0);
    this.avgLength = rules.length > 0 && total > 0 ? total / rules.length : 1;
  }

  /** Top k rules by score (score > 0 only), ties broken by corpus order. */
  search(query: string, k = 3): Bm25Hit[] {
    if (k <= 0 || this.rules.length === 0) return [];
    const n = this.rules.length;
    const terms = [...new Set(tokenize(query))].flatMap((term) => {
      const df = this.docFreq.get(term);
      return df ? [{ term, idf: Math.log(1 + (n - df + 0.5) / (df + 0.5)) }] : [];
    });
    const hits: (Bm25Hit & { index: number })[] = [];
    this.rules.forEach((rule, index) => {
      const tf = this.termFreqs[index]!;
      const norm = this.k1 * (1 - this.b + (this.b * this.lengths[index]!) / this.avgLength);
      let score = 0;
      for (const { term, idf } of terms) {
        const f = tf.get(term);
        if (f) score += (idf * f * (this.k1 + 1)) / (f + norm);
      }
      if (score > 0) hits.push({ rule, score, index });
    });
    hits.sort((x, y) => y.score - x.score || x.index - y.index);
    return hits.slice(0, k).map(({ rule, score }) => ({ rule, score }));
  }
}

const LANGUAGE_CODES: Record<string, string> = {
  ua: 'uk',
  english: 'en',
  german: 'de',
  deutsch: 'de',
  ukrainian: 'uk',
  українська: 'uk',
};

/**
 * Corpus file code for a language tag, case-insensitive and trimmed: the primary subtag
 * (`en-US`, `en_GB` → `en`), with `ua` (the AQUA files' code) → `uk` (ISO 639-1 for Ukrainian).
 * The names English, German and Ukrainian are accepted too, as the agent's prompt shows names.
 */
export function corpusLanguage(code: string): string {
  const primary = code.trim().toLowerCase().split(/[-_]/)[0]!;
  return LANGUAGE_CODES[primary] ?? primary;
}

/** Prompt path of a language's corpus (relative to the prompts directory). */
export function corpusPath(code: string): string {
  return `gec/grammar/${corpusLanguage(code)}.md`;
}

const MAX_RULE_CHARS = 300;

function oneLine(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  if (flat.length <= MAX_RULE_CHARS) return flat;
  const cut = flat.slice(0, MAX_RULE_CHARS - 1);
  const space = cut.lastIndexOf(' ');
  return `${(space > MAX_RULE_CHARS / 2 ? cut.slice(0, space) : cut).trimEnd()}…`;
}

/** Search hits as the agent's observation: numbered `title: text` lines, or a no-match sentence. */
export function formatRules(hits: readonly { rule: GrammarRule }[], language: string): string {
  if (hits.length === 0) return `No matching grammar rule in the ${language.trim()} corpus.`;
  return hits.map(({ rule }, i) => `${i + 1}. ${rule.title}: ${oneLine(rule.text)}`).join('\n');
}

/** Words that name what an edit changed, in the three shipped corpora's languages. */
const HINTS: [RegExp, string][] = [
  [/,/, 'comma Komma кома'],
  [/[-‐‑–—]/, 'dash hyphen Gedankenstrich Bindestrich тире дефіс'],
  [/[.…]/, 'period full stop Punkt крапка'],
  [/[?]/, 'question mark Fragezeichen знак питання'],
  [/[!]/, 'exclamation mark Ausrufezeichen знак оклику'],
  [/[:;]/, 'colon semicolon Doppelpunkt Semikolon двокрапка крапка з комою'],
  [/["“”„«»]/, 'quotation marks Anführungszeichen лапки'],
  [/['’ʼ]/, 'apostrophe Apostroph апостроф'],
];

/**
 * Extra query words for an edit: BM25 cannot see punctuation or case, which many edits are
 * about, so the punctuation marks an edit adds or removes and a case-only change are named.
 */
export function editHints(spans: readonly { old: string; new: string }[]): string {
  const hints = new Set<string>();
  for (const span of spans) {
    const changed = [...span.new]
      .filter((ch) => !span.old.includes(ch))
      .concat([...span.old].filter((ch) => !span.new.includes(ch)));
    for (const [pattern, words] of HINTS) if (changed.some((ch) => pattern.test(ch))) hints.add(words);
    if (span.old !== span.new && span.old.toLowerCase() === span.new.toLowerCase()) {
      hints.add('capital letter capitalisation Großschreibung Kleinschreibung велика літера');
    }
  }
  return [...hints].join(' ');
}
