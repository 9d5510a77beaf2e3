/**
 * The checks decided without a model: each gives a score (1 or 0, or the similarity) and
 * whether it passes, with a reason a person can read.
 */

import { normalizeAnswer } from '../../lib/metrics/answer-match.js';
import { compilePattern } from '../../model/patterns.js';
import type { DeterministicCheck } from './suite.js';
import { bleu, fuzzyRatio, levenshtein, rougeL, rougeN } from './text.js';

export interface Verdict {
  pass: boolean;
  /** The check's score: 1 or 0 for a yes/no check, the similarity or the grader's score else. */
  score: number;
  reason: string;
}

/** `{name}` placeholders of a check's text: a dataset column, or `{output}`. */
export const TEXT_PLACEHOLDER = /\{([A-Za-z][A-Za-z0-9_]*)\}/g;

/** The placeholders a text names. */
export function textPlaceholders(text: string): string[] {
  return [...text.matchAll(TEXT_PLACEHOLDER)].map((m) => m[1]!);
}

/** A check's text with its placeholders filled in; an unknown name stays as written. */
export function fill(text: string, vars: Readonly<Record<string, string>>): string {
  return text.replace(TEXT_PLACEHOLDER, (whole, name: string) => vars[name] ?? whole);
}

const show = (text: string) => JSON.stringify(text.length > 80 ? `${text.slice(0, 77)}…` : text);

const yes = (pass: boolean, reason: string): Verdict => ({ pass, score: pass ? 1 : 0, reason });

/** Openings of a JSON value tried by {@link containsJson}: bounds its work on a hostile output. */
const JSON_STARTS = 64;

/**
 * Whether some JSON object or array is in the text: from each of the first {@link JSON_STARTS}
 * `{` or `[`, the balanced stretch (strings respected) is parsed; linear in the text per start.
 */
function containsJson(text: string): boolean {
  let tried = 0;
  for (let i = 0; i < text.length && tried < JSON_STARTS; i += 1) {
    if (text[i] !== '{' && text[i] !== '[') continue;
    tried += 1;
    const end = balancedEnd(text, i);
    if (end < 0) continue;
    try {
      JSON.parse(text.slice(i, end + 1));
      return true;
    } catch {
      // another opening may start a value
    }
  }
  return false;
}

/** The index closing the bracket at `start` (strings and escapes respected); -1 when none does. */
function balancedEnd(text: string, start: number): number {
  let depth = 0;
  let inString = false;
  for (let i = start; i < text.length; i += 1) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i += 1;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === '{' || c === '[') depth += 1;
    else if (c === '}' || c === ']') {
      depth -= 1;
      if (depth === 0) return i;
    }
  }
  return -1;
}

function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

const SIMILARITY: Record<string, (candidate: string, reference: string) => number> = {
  bleu: (c, r) => bleu(c, [r]),
  bleu_promptfoo: (c, r) => bleu(c, [r], true),
  rouge_1: (c, r) => rougeN(c, r, 1),
  rouge_2: (c, r) => rougeN(c, r, 2),
  rouge_3: (c, r) => rougeN(c, r, 3),
  rouge_4: (c, r) => rougeN(c, r, 4),
  rouge_5: (c, r) => rougeN(c, r, 5),
  rouge_l: rougeL,
  fuzzy_match: fuzzyRatio,
};

/** Acceptable answers a filled value gives: each text of a JSON list of texts, else the value itself. */
export function answerList(value: string): string[] {
  if (!value.startsWith('[')) return [value];
  try {
    const list: unknown = JSON.parse(value);
    if (Array.isArray(list) && list.every((a) => typeof a === 'string')) return list;
  } catch {
    // not a list: the text itself
  }
  return [value];
}

/** The check's verdict before `not` turns it. */
function decide(check: DeterministicCheck, input: string, vars: Readonly<Record<string, string>>): Verdict {
  const fold = (text: string, ignoreCase: boolean) => (ignoreCase ? text.toLowerCase() : text);
  switch (check.type) {
    case 'equals': {
      const want = fill(check.value, vars);
      const [a, b] = check.trim ? [input.trim(), want.trim()] : [input, want];
      const pass = fold(a, check.ignoreCase) === fold(b, check.ignoreCase);
      return yes(pass, pass ? `equals ${show(want)}` : `${show(input)} is not ${show(want)}`);
    }
    case 'contains': {
      const wanted = check.values.flatMap((v) => answerList(fill(v, vars)));
      const haystack = fold(input, check.ignoreCase);
      const found = wanted.filter((w) => haystack.includes(fold(w, check.ignoreCase)));
      const pass = check.mode === 'any' ? found.length > 0 : found.length === wanted.length;
      const missing = wanted.filter((w) => !found.includes(w));
      return yes(
        pass,
        pass
          ? `contains ${found.map(show).join(', ')}`
          : check.mode === 'any'
            ? `contains none of ${wanted.map(show).join(', ')}`
            : `lacks ${missing.map(show).join(', ')}`,
      );
    }
    case 'starts-with': {
      const want = fill(check.value, vars);
      const pass = input.startsWith(want);
      return yes(pass, pass ? `starts with ${show(want)}` : `does not start with ${show(want)}`);
    }
    case 'regex': {
      const pattern = compilePattern(check.ignoreCase ? `(?i)${check.pattern}` : check.pattern);
      const pass = pattern.exec(input) !== undefined;
      return yes(pass, `${pass ? 'matches' : 'does not match'} /${check.pattern}/`);
    }
    case 'json': {
      const pass = check.mode === 'is' ? isJson(input.trim()) : containsJson(input);
      return yes(pass, `${pass ? 'is' : 'is not'} ${check.mode === 'is' ? 'JSON' : 'text holding JSON'}`);
    }
    case 'levenshtein': {
      const want = fill(check.value, vars);
      const distance = levenshtein(input, want);
      return yes(distance <= check.threshold, `edit distance ${distance} (pass at ≤ ${check.threshold})`);
    }
    case 'similarity': {
      const score = SIMILARITY[check.metric]!(input, fill(check.reference, vars));
      return {
        pass: score >= check.threshold,
        score,
        reason: `${check.metric} ${score.toFixed(4)} (pass at ≥ ${check.threshold})`,
      };
    }
    case 'match': {
      const answers = check.values.flatMap((v) => answerList(fill(v, vars)));
      const hit = answers.find((answer) => {
        if (check.how === 'starts-with') return input.startsWith(answer);
        if (check.how === 'includes')
          return fold(input, check.ignoreCase).includes(fold(answer, check.ignoreCase));
        const [s, t] = [normalizeAnswer(input), normalizeAnswer(answer)];
        return s === '' || t === '' ? s === t : s.includes(t) || t.includes(s);
      });
      return yes(
        hit !== undefined,
        hit !== undefined ? `matches ${show(hit)}` : `matches none of ${answers.map(show).join(', ')}`,
      );
    }
  }
}

/** A check decided without a model, `not` applied. */
export function deterministicVerdict(
  check: DeterministicCheck,
  vars: Readonly<Record<string, string>>,
): Verdict {
  const verdict = decide(check, fill(check.input, vars), vars);
  if (!check.not) return verdict;
  return { pass: !verdict.pass, score: 1 - verdict.score, reason: `not: ${verdict.reason}` };
}
