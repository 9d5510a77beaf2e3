/**
 * Regular expressions a suite gives (`dataset.extract`), run in time linear in the text they
 * read: the suite's pattern is compiled by RE2 (the pure-JavaScript port `re2js`), which never
 * backtracks, so no pattern and no dataset field can stall a run — JavaScript's own engine
 * takes time exponential in the field's length on a pattern like `^((?:a+)+)$`. The price is
 * RE2's syntax: no backreferences and no lookaround, which {@link compilePattern} refuses with
 * the construct named. JavaScript spellings RE2 lacks (`\u00e9`, `\cA`, `(?<name>…)`) are
 * translated. Both caps below bound the work per character, so a whole field costs at most
 * their product times its length.
 */

import { RE2JS, RE2JSException } from 're2js';
import { InputError } from './errors.js';

/** The longest pattern source a suite may give, in characters. */
export const MAX_PATTERN_CHARS = 1_000;

/**
 * The most instructions a compiled pattern may have: matching costs up to this much per
 * character of the text (`a{0,99}` counts as 99 copies of `a`).
 */
export const MAX_PATTERN_PROGRAM = 1_000;

/** A compiled pattern: what it was written as, its capture groups, and the first match's group 1. */
export interface Pattern {
  /** The pattern as the suite wrote it. */
  readonly source: string;
  /** How many capture groups it has. */
  readonly groups: number;
  /**
   * The first match in `text`, like RegExp's `exec`: undefined when there is none; else the
   * text of capture group 1 ("" when the group took no part in the match, or there is none).
   */
  exec(text: string): { group: string } | undefined;
}

/** A pattern a suite gave that cannot run: the message says which construct and what to do. */
export class PatternError extends InputError {
  override readonly name = 'PatternError';
}

const LINEAR = 'patterns are RE2 syntax and run in linear time';

/**
 * A construct RE2 does not have, found in `source` outside character classes: a backreference
 * or a lookaround, named with what to write instead. Undefined when there is none.
 */
export function unsupportedConstruct(source: string): string | undefined {
  let inClass = false;
  for (let i = 0; i < source.length; i++) {
    const c = source[i];
    if (c === '\\') {
      const next = source[i + 1] ?? '';
      if (!inClass && /[1-9]/.test(next))
        return `uses a backreference (\\${next}): ${LINEAR}, which rules out backreferences; match the repeated text again instead of referring back to a group`;
      if (!inClass && next === 'k' && source[i + 2] === '<')
        return `uses a named backreference (\\k<…>): ${LINEAR}, which rules out backreferences; match the repeated text again instead of referring back to a group`;
      i++;
    } else if (inClass) {
      if (c === ']') inClass = false;
    } else if (c === '[') {
      inClass = true;
      // A `]` first in a class (or after `^`) is a literal one.
      if (source[i + 1] === '^') i++;
      if (source[i + 1] === ']') i++;
    } else if (c === '(' && source[i + 1] === '?') {
      const look = /^\(\?(<?[=!])/.exec(source.slice(i, i + 4))?.[1];
      if (look)
        return `uses a ${look.startsWith('<') ? 'lookbehind' : 'lookahead'} ((?${look}…)): ${LINEAR}, which rules out lookaround; match the surrounding text too and keep the part you want in the capture group`;
      if (source[i + 2] === '>')
        return `uses an atomic group ((?>…)): ${LINEAR}, which have no atomic groups (none is needed: a pattern never backtracks); write (?:…)`;
    }
  }
  return undefined;
}

/**
 * Compiles a pattern a suite gave, or throws a PatternError saying why it cannot run: too
 * long, a construct RE2 lacks, a syntax error, or too large once compiled.
 */
export function compilePattern(source: string): Pattern {
  if (source.length > MAX_PATTERN_CHARS)
    throw new PatternError(
      `the pattern has ${source.length} characters, more than ${MAX_PATTERN_CHARS.toLocaleString('en-US')}: ${LINEAR}, with a bounded length; match only the part around what you keep`,
    );
  const construct = unsupportedConstruct(source);
  if (construct) throw new PatternError(`the pattern ${construct}`);
  let compiled: RE2JS;
  try {
    compiled = RE2JS.compile(RE2JS.translateRegExp(source));
  } catch (error) {
    if (!(error instanceof RE2JSException)) throw error;
    throw new PatternError(
      `the pattern is not a regular expression RE2 reads (${LINEAR}): ${describe(error)}`,
    );
  }
  const size = compiled.programSize();
  if (size > MAX_PATTERN_PROGRAM)
    throw new PatternError(
      `the pattern compiles to ${size} steps, more than ${MAX_PATTERN_PROGRAM.toLocaleString('en-US')}: ${LINEAR}, each character of a field costing up to one pass over the steps; use smaller repeat counts ({0,99} is 99 copies)`,
    );
  const groups = compiled.groupCount();
  return {
    source,
    groups,
    exec(text) {
      const match = compiled.matcher(text);
      if (!match.find()) return undefined;
      return { group: groups >= 1 ? (match.group(1) ?? '') : '' };
    },
  };
}

/** RE2's own words for a syntax error: what is wrong, and where. */
function describe(error: RE2JSException): string {
  const detail = error as RE2JSException & { getDescription?(): string; getPattern?(): string | null };
  const what = detail.getDescription?.();
  const where = detail.getPattern?.();
  if (what) return where ? `${what} at \`${where}\`` : what;
  return error.message;
}

/** Why `source` cannot run as a suite's pattern, or undefined when it can. */
export function patternProblem(source: string): string | undefined {
  try {
    compilePattern(source);
    return undefined;
  } catch (error) {
    if (error instanceof PatternError) return error.message;
    throw error;
  }
}
