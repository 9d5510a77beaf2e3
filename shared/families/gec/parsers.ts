import { extractJsonObject, type Parsed } from '../../family/answer.js';
import { type GecLabel, normalizeLabel } from './labels.js';

/**
 * Reading the GEC judges' free-text answers (labels, sub-judge scores, agent steps). Models add
 * prose, markdown and echoes of the prompt's format, so every reader is line-based and lenient
 * about decoration but strict about the value itself.
 */

export type { Parsed } from '../../family/answer.js';

// A whole label token: not part of a word ('TPS', 'FP21', 'is_TP'), `FP` needs its level.
const LABEL = String.raw`(?<![A-Za-z0-9]_*)(?:T[PN]|FN|FP[ _-]?[123])(?!_*[A-Za-z0-9]|-\d)`;
const LABEL_ONLY = new RegExp(`^${LABEL}$`, 'i');
const DECORATION = /^[\s*_"'`“”‘’[\](){}.,:;!]+|[\s*_"'`“”‘’[\](){}.,:;!]+$/g;
const SIGN = '[+\\-−–]';

/** A key at the start of a line, behind markdown (`**Final Answer:**`, `- score:`, `> Label:`); group 1 is the rest. */
const keyLine = (key: string, lead = '[\\s>*_#\\-`]*') =>
  new RegExp(`^${lead}(?:${key})[*_\`"\\s]*[:：=][*_\`\\s]*(.*)$`, 'i');

const ANSWER_KEYS = ['final[\\s_]*answer', 'label', 'classification', 'answer'].map((k) => keyLine(k));
const REASON_LINE = keyLine('reason(?:ing)?');
const UPPER_KEY = /^[\s>*_#\-`"]*[A-Z][A-Z_ ]*[A-Z]["*_`\s]*:/;
const KNOWN_KEY = keyLine('score|severity|improvement|(?:source|target)[\\s_-]*correct|final[\\s_]*answer');
const OBSERVATION = keyLine('observation');
const ACTION = keyLine('action');
const ACTION_INPUT = keyLine('action[\\s_]*input');
const FINAL = ANSWER_KEYS[0]!;
const NO_ACTION = /^(?:none|n\/a|no action|no tool)\b/i;
const isAction = (line: string) => {
  const rest = ACTION.exec(line)?.[1];
  return rest !== undefined && !NO_ACTION.test(rest);
};

/** A lenient label: 'FP 2' | 'fp-2' | 'FP_2' | '**FP2**' | '"tp"' → canonical GecLabel, else undefined. Only whole label tokens. */
export function canonicalLabel(token: string): GecLabel | undefined {
  const bare = token.replace(DECORATION, '');
  return LABEL_ONLY.test(bare) ? normalizeLabel(bare.replace(/[ _-]/g, '')) : undefined;
}

type Found = { label: GecLabel; reason: string };

/** Label tokens in `s`, except those in a `TP|FP1|FP2` or `FP2/FP3` list (the prompt's format echoed, or indecision). */
function labelTokens(s: string): { label: GecLabel; start: number; end: number }[] {
  const all = [...s.matchAll(new RegExp(LABEL, 'gi'))].map((m) => ({
    label: canonicalLabel(m[0])!,
    start: m.index,
    end: m.index + m[0].length,
  }));
  const joined = (a?: { end: number }, b?: { start: number }) =>
    a !== undefined && b !== undefined && /^\s*[|/]\s*$/.test(s.slice(a.end, b.start));
  return all.filter((t, i) => !joined(all[i - 1], t) && !joined(t, all[i + 1]));
}

const tidy = (s: string) => s.replace(/^[\s*_`]+|[\s*_`]+$/g, '');

/** The first answer label on a line and what follows it after ` - `, ` — ` or `:`. */
function labelOnLine(line: string): Found | undefined {
  const [first] = labelTokens(line);
  if (!first) return undefined;
  const sep = /^[*_"'`\])]*\s*(?:-+|—|–|:)\s*(.*)$/.exec(line.slice(first.end));
  return { label: first.label, reason: sep ? tidy(sep[1]!) : '' };
}

/** The label after `key` on line i, or on the next line with text when the key line is bare (`**Final Answer:**\nFP2`). */
function labelAfterKey(lines: string[], i: number, key: RegExp): Found | undefined {
  const rest = key.exec(lines[i]!)?.[1] ?? '';
  const line = /[A-Za-z0-9]/.test(rest) ? rest : lines.slice(i + 1).find((l) => /[A-Za-z0-9]/.test(l));
  return line === undefined ? undefined : labelOnLine(line);
}

function allowedOnly<T extends Found>(found: T, allowed: readonly GecLabel[]): Parsed<T> {
  if (allowed.includes(found.label)) return { ok: true, value: found };
  return { ok: false, problem: `label ${found.label} is not allowed here (allowed: ${allowed.join(', ')})` };
}

function labelFromKeys(lines: string[]): Found | undefined {
  for (const key of ANSWER_KEYS) {
    // The last readable one: models restate or revise their answer, rarely the other way round.
    for (let i = lines.length - 1; i >= 0; i -= 1) {
      const found = key.test(lines[i]!) ? labelAfterKey(lines, i, key) : undefined;
      if (found) return found;
    }
  }
  return undefined;
}

function labelFromJson(text: string): Found | undefined {
  const label = canonicalLabel(
    /"(?:label|classification|final_answer|answer)"\s*:\s*"([^"]*)"/i.exec(text)?.[1] ?? '',
  );
  if (!label) return undefined;
  const raw = /"(?:reason|reasoning|explanation)"\s*:\s*"((?:[^"\\]|\\.)*)"/i.exec(text)?.[1] ?? '';
  try {
    return { label, reason: (JSON.parse(`"${raw}"`) as string).trim() };
  } catch {
    return { label, reason: raw.trim() };
  }
}

/** The answer label in free text, restricted to `allowed`: key lines (`Final Answer:`, `Label:`, `Classification:`, `Answer:`), then JSON `"label"`, then the first label token. */
export function parseLabelText(text: string, allowed: readonly GecLabel[]): Parsed<Found> {
  const lines = text.split(/\r?\n/);
  const found =
    labelFromKeys(lines) ?? labelFromJson(text) ?? lines.map(labelOnLine).find((f) => f !== undefined);
  if (found) return allowedOnly(found, allowed);
  return { ok: false, problem: `no label found in the answer (expected one of ${allowed.join(', ')})` };
}

// The prompt's scale echoed back: `[-1 to 3]`, `[0-4]`, `-3 to +3`, `[score]`; but `[2]` is an answer.
const ECHO = new RegExp(
  `^(?:\\[(?!\\s*${SIGN}?\\s*\\d+(?:[.,]\\d+)?\\s*\\])[^\\]]*\\]|${SIGN}?\\d+(?:\\s*(?:to|\\.\\.)\\s*|[-–—])${SIGN}?\\d+)`,
  'i',
);

/** The integer at the start of a value, undefined for a scale echo. */
function readInteger(rest: string, min: number, max: number): Parsed<number> | undefined {
  const v = rest.replace(/^[\s*_`"']+/, '');
  if (ECHO.test(v)) return undefined;
  const m = new RegExp(`^\\[?\\s*(${SIGN}?)\\s*(\\d+(?:[.,]\\d+)?)(?!\\d)`).exec(v);
  if (!m) return { ok: false, problem: `no number in "${v.slice(0, 40)}"` };
  // `|| 0` turns "-0" into 0.
  const value = (m[1] && m[1] !== '+' ? -1 : 1) * Number(m[2]!.replace(',', '.')) || 0;
  if (!Number.isInteger(value)) return { ok: false, problem: `${m[1]}${m[2]} is not an integer` };
  if (value < min || value > max) return { ok: false, problem: `${value} is out of range ${min}..${max}` };
  return { ok: true, value };
}

const isKeyLine = (line: string) => UPPER_KEY.test(line) || KNOWN_KEY.test(line) || REASON_LINE.test(line);

/** The `REASON:`/`REASONING:` text first after line `from` (else the last before it), up to the next key or fence. */
function readReason(lines: string[], from: number): string {
  let start = lines.findIndex((l, i) => i >= from && REASON_LINE.test(l));
  if (start < 0) start = lines.findLastIndex((l, i) => i < from && REASON_LINE.test(l));
  if (start < 0) return '';
  const parts = [REASON_LINE.exec(lines[start]!)![1]!];
  for (const line of lines.slice(start + 1)) {
    if (isKeyLine(line) || /^\s*```/.test(line)) break;
    parts.push(line);
  }
  return tidy(parts.join('\n'));
}

/** `KEY: value` of a modular sub-judge (`SCORE` -1..3, `SEVERITY` 0..4, `IMPROVEMENT` -3..+3): the last valid in-range integer, scale echoes skipped. */
export function parseScore(
  text: string,
  key: 'SCORE' | 'SEVERITY' | 'IMPROVEMENT',
  min: number,
  max: number,
): Parsed<{ value: number; reason: string }> {
  const lines = text.split(/\r?\n/);
  const re = keyLine(
    `(?:(?:final|overall|nonsense|meaning[\\s_-]*change|quality)\\s+)?${key}`,
    '[\\s>*_#\\-`"{,]*',
  );
  let best: { value: number; line: number } | undefined;
  let problem: string | undefined;
  lines.forEach((line, i) => {
    let rest = re.exec(line)?.[1];
    // `**SCORE:**` alone on its line, the value on the next.
    if (rest !== undefined && !/\w/.test(rest)) rest = lines.slice(i + 1).find((l) => /\w/.test(l)) ?? '';
    const read = rest === undefined ? undefined : readInteger(rest, min, max);
    if (read?.ok) best = { value: read.value, line: i };
    else if (read) problem = `${key}: ${read.problem}`;
  });
  if (best) return { ok: true, value: { value: best.value, reason: readReason(lines, best.line) } };
  return { ok: false, problem: problem ?? `no ${key}: value in the answer` };
}

function yesNo(value: unknown): boolean | undefined {
  if (typeof value === 'boolean') return value;
  const s = typeof value === 'string' ? value.trim().toLowerCase() : '';
  if (['yes', 'true', 'correct'].includes(s)) return true;
  if (['no', 'false', 'incorrect'].includes(s)) return false;
  return undefined;
}

const PAIR_LINE =
  /^[\s>*_#\-`"]*(source|target)[\s_-]*correct(?:ness)?["*_`\s]*[:=][\s*_`"]*\[?\s*(yes|no|true|false|correct|incorrect)\b(?!\s*[/|])/gim;

/** Pair-correctness sub-judge: JSON `source_correct`/`target_correct` (booleans or yes/no strings) or `SOURCE_CORRECT: yes` lines; both required. */
export function parsePairCorrectness(
  text: string,
): Parsed<{ sourceCorrect: boolean; targetCorrect: boolean; reason: string }> {
  const json = extractJsonObject(text);
  const fields = json !== null && typeof json === 'object' ? Object.entries(json) : [];
  const field = (...names: string[]) =>
    fields.find(([k]) => names.includes(k.toLowerCase().replace(/[^a-z]/g, '')))?.[1];
  const lines: Record<string, boolean | undefined> = {};
  for (const m of text.matchAll(PAIR_LINE)) lines[m[1]!.toLowerCase()] = yesNo(m[2]);
  const sourceCorrect = yesNo(field('sourcecorrect')) ?? lines.source;
  const targetCorrect = yesNo(field('targetcorrect')) ?? lines.target;
  if (sourceCorrect === undefined || targetCorrect === undefined) {
    const missing = [sourceCorrect ?? 'SOURCE_CORRECT', targetCorrect ?? 'TARGET_CORRECT'].filter(
      (m) => typeof m === 'string',
    );
    return { ok: false, problem: `missing ${missing.join(' and ')} (yes or no) in the answer` };
  }
  const jsonReason = field('reason', 'reasoning', 'explanation');
  const reason = typeof jsonReason === 'string' ? jsonReason.trim() : readReason(text.split(/\r?\n/), 0);
  return { ok: true, value: { sourceCorrect, targetCorrect, reason } };
}

/** One step of the seed's agent text protocol (ReAct). */
export type AgentStep =
  | { kind: 'final'; label: GecLabel; reason: string }
  | { kind: 'action'; tool: string; args: string[]; call: string }
  | { kind: 'malformed'; problem: string };

const QUOTES: Record<string, string> = { '"': '"', "'": "'", '“': '”', '‘': '’' };

/** Where the quote opened at `open` closes: a matching quote followed by `,`, the end, or (in parens) `)`. */
function closingQuote(s: string, open: number, paren: boolean): number {
  const close = QUOTES[s[open]!]!;
  const after = paren ? /^\s*(?:[,)]|$)/ : /^\s*(?:,|$)/;
  for (let j = open + 1; j < s.length; j += 1) {
    if (s[j] === '\\') j += 1;
    else if (s[j] === close && after.test(s.slice(j + 1))) return j;
  }
  return -1;
}

const unquote = (s: string) => s.replace(/\\(["'\\])/g, '$1');

/** Top-level comma-separated args, up to the closing paren when `paren` (its absence tolerated). */
function splitArgs(s: string, paren: boolean): string[] {
  const args: string[] = [];
  let current = '';
  let quoted: string | undefined;
  let depth = 0;
  const push = () => {
    args.push(quoted ?? current.trim());
    current = '';
    quoted = undefined;
  };
  for (let i = 0; i < s.length; i += 1) {
    const ch = s[i]!;
    const opens = quoted === undefined && current.trim() === '' && QUOTES[ch] !== undefined;
    const end = opens ? closingQuote(s, i, paren) : -1;
    if (opens && end < 0) {
      // An unclosed quote runs to the end (the model forgot it, and maybe the paren).
      const rest = s.slice(i + 1);
      quoted = unquote(paren ? rest.replace(/\)\s*$/, '') : rest);
      break;
    }
    if (end >= 0) {
      quoted = unquote(s.slice(i + 1, end));
      i = end;
    } else if (depth === 0 && ch === ',') push();
    else if (depth === 0 && ch === ')' && paren) break;
    else {
      if (ch === '(') depth += 1;
      else if (ch === ')' && depth > 0) depth -= 1;
      if (quoted === undefined) current += ch;
    }
  }
  if (args.length > 0 || quoted !== undefined || current.trim() !== '') push();
  return args;
}

function actionArgs(lines: string[], i: number, parens: string | undefined): string[] {
  if (parens !== undefined) return splitArgs(parens.replace(/[\s`*]+$/, ''), true);
  const input = lines.slice(i + 1).find((l) => ACTION_INPUT.test(l));
  const text = input === undefined ? '' : ACTION_INPUT.exec(input)![1]!.replace(/[\s`*]+$/, '');
  if (text.startsWith('(')) return splitArgs(text.slice(1), true);
  if (text.startsWith('{')) {
    try {
      return Object.values(JSON.parse(text) as object).map((v) =>
        typeof v === 'string' ? v : JSON.stringify(v),
      );
    } catch {}
  }
  return splitArgs(text, false);
}

function readAction(lines: string[], i: number): AgentStep {
  const rest = ACTION.exec(lines[i]!)![1]!;
  const m = /^([A-Za-z_]\w*)[\s*`]*(?:\((.*))?$/.exec(rest) ?? /([A-Za-z_]\w*)\s*\((.*)$/.exec(rest);
  if (!m) return { kind: 'malformed', problem: `could not read the action "${rest.slice(0, 80)}"` };
  const tool = m[1]!;
  const args = actionArgs(lines, i, m[2]);
  const shown = args.map((a) => (a === '' || /[,"()]|^\s|\s$/.test(a) ? JSON.stringify(a) : a));
  return { kind: 'action', tool, args, call: `${tool}(${shown.join(', ')})` };
}

/**
 * One step of the agent protocol: the first `Action:` before any `Final Answer:` is an action step,
 * else a `Final Answer:` is final; text from a (hallucinated) `Observation:` line on is ignored.
 * `Action: None` / `N/A` is no action. Tool names are not validated here.
 */
export function parseAgentStep(text: string, allowed: readonly GecLabel[]): AgentStep {
  const lines = text.split(/\r?\n/);
  const cut = lines.findIndex((l) => OBSERVATION.test(l));
  const kept = cut < 0 ? lines : lines.slice(0, cut);
  const actionAt = kept.findIndex(isAction);
  const finalAt = kept.findIndex((l) => FINAL.test(l));
  if (actionAt >= 0 && (finalAt < 0 || actionAt < finalAt)) return readAction(kept, actionAt);
  if (finalAt < 0) return { kind: 'malformed', problem: 'no Action or Final Answer in the reply' };
  const found = labelAfterKey(kept, finalAt, FINAL);
  if (!found) {
    return {
      kind: 'malformed',
      problem: `could not read a label in "${kept[finalAt]!.trim().slice(0, 80)}" (allowed: ${allowed.join(', ')})`,
    };
  }
  const checked = allowedOnly(found, allowed);
  return checked.ok ? { kind: 'final', ...checked.value } : { kind: 'malformed', problem: checked.problem };
}
