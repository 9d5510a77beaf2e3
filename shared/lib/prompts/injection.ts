/**
 * Signs that a dataset row may try to steer the model that reads it. The row's text reaches the
 * model only as data (in its own tag sections of the user message, apart from the
 * instructions), yet a model may still obey it; a row that carries a verdict in the answer's
 * format, or words addressed to the judge, is shown as a possible injection on its result and
 * in the report, so no forged verdict passes as a clean one.
 *
 * Every check is linear in the text: plain substring search over the text lower-cased with its
 * whitespace runs collapsed, and patterns anchored at a line start or on a fixed key, with no
 * nested quantifiers, so a hostile row cannot make the check slow.
 */
import type { InjectionSign } from '../../model/model.js';

/** Keys of a verdict in the JSON answer formats the judges are told to reply in. */
const VERDICT_KEY = /"(?:label|score|verdict|rating|grade|severity)"[ \t]*:/i;

/** A verdict written as a line of its own (`label: helpful`, `Final Answer: TP`), at a line start. */
const VERDICT_LINE = /^[ \t]*(?:label|verdict|rating|final answer)[ \t]*[:=][ \t]*\S/im;

/** Directives that tell the model what to answer, spelled as tokens. */
const VERDICT_TOKENS = ['answer_with:', 'answer with:', 'answer-with:'];

/** Words addressed to the model reading the row (matched lower-case, whitespace collapsed). */
const INSTRUCTIONS = [
  'ignore previous instructions',
  'ignore all previous',
  'ignore the previous',
  'ignore prior instructions',
  'ignore the above',
  'ignore the instructions',
  'ignore your instructions',
  'ignore any instructions',
  'disregard previous',
  'disregard all previous',
  'disregard the above',
  'disregard the instructions',
  'forget your instructions',
  'you must answer',
  'you must respond',
  'you must reply',
  'you must output',
  'you must rate',
  'you must score',
  'you must label',
  'new instructions:',
  'developer mode',
  'note to the judge',
  'to the grader:',
  'to the judge:',
];

/** Any of the phrases, as one search: a pattern of alternative literals, tried in one pass over the text. */
function anyOf(phrases: readonly string[]): RegExp {
  return new RegExp(phrases.map((phrase) => phrase.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|'));
}

const ANY_VERDICT_TOKEN = anyOf(VERDICT_TOKENS);
const ANY_INSTRUCTION = anyOf(INSTRUCTIONS);

/** Whitespace that is not already single spaces: two in a row, or any but a space. */
const UNCOLLAPSED = /\s\s|[^\S ]/;

/** The text lower-cased, each run of whitespace one space: phrases match across line breaks. */
function normalised(text: string): string {
  const lower = text.toLowerCase();
  return UNCOLLAPSED.test(lower) ? lower.replace(/\s+/g, ' ') : lower;
}

/** What a text shows of an injection, each kind of sign once. */
export function textSigns(text: string): InjectionSign['sign'][] {
  const signs: InjectionSign['sign'][] = [];
  if (VERDICT_KEY.test(text)) signs.push('answer format');
  const flat = normalised(text);
  if (VERDICT_LINE.test(text) || ANY_VERDICT_TOKEN.test(flat)) signs.push('verdict');
  if (ANY_INSTRUCTION.test(flat)) signs.push('instruction');
  return signs;
}

/**
 * The signs of a possible injection in a row's data fields (the input the model reads), field
 * by field in the input's order; empty when the row shows none.
 */
export function injectionSigns(input: Record<string, string>): InjectionSign[] {
  return Object.entries(input).flatMap(([field, text]) => textSigns(text).map((sign) => ({ field, sign })));
}
