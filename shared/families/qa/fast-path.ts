/**
 * The deterministic fast path in front of the QA graders: reads the option an answer selects,
 * or the final number it gives, when that is unambiguous — and says "undecided" otherwise, so
 * the LLM grader gets every doubtful case. Conservative by design: a wrong fast verdict is
 * worse than an LLM call. Pure.
 *
 * The physics QA study's own LLM grader scored plainly right answers 0
 * (`The slope of a velocity-time graph represents: (B) Acceleration`, key B; `… = 4 m/s^2`,
 * key 4); regex extraction, on the other hand, misses on hard sets when it guesses. So:
 * - an option: the letter when exactly one is selected (`(B)`, `B.`, `Answer: B`,
 *   `{"answer": "B"}`), else the option's text when it alone is stated; several letters, or
 *   the question echoed back with its options, are undecided — unless the answer opens with
 *   its selection and that option's own text (`Answer: (B) Net torque is zero.`, `[C] Moment
 *   of Inertia`) and names no other option with its text; a JSON answer's answer field in
 *   words (`{"Answer": "C) Third Law"}`) is read by the same rules; "none of the above" selects
 *   nothing;
 * - a number: the final one, with its unit read as a unit (`4 m/s^2` is 4, not 2), in plain,
 *   grouped (`1,000`), scientific (`-3.2e-4`, `2.5 × 10^3`), LaTeX (`$4.8\mathrm{~km}$`) or
 *   JSON (`{"impulse": 5}`) form; competing numbers, or none, are undecided — unless the
 *   worked answer's last sentence states exactly one (`… So, the torque is 2 N·m.`); a last
 *   sentence with several numbers, or a closing note, leaves it undecided.
 */

export type FastPath<T> = { decided: true; value: T; how: string } | { decided: false; reason: string };

const undecided = (reason: string): { decided: false; reason: string } => ({ decided: false, reason });

/** A JSON object in the answer (the whole answer, or a fenced block), if any. */
function jsonObject(answer: string): Record<string, unknown> | undefined {
  const fenced = /```(?:json)?\s*([\s\S]*?)```/.exec(answer)?.[1];
  for (const text of [fenced, answer]) {
    const trimmed = text?.trim();
    if (!trimmed?.startsWith('{') || !trimmed.endsWith('}')) continue;
    try {
      const parsed: unknown = JSON.parse(trimmed);
      if (parsed && typeof parsed === 'object' && !Array.isArray(parsed))
        return parsed as Record<string, unknown>;
    } catch {
      // not JSON: read as text
    }
  }
  return undefined;
}

const normalText = (text: string) =>
  text
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, ' ')
    .trim();

/**
 * The option an answer selects. `options` maps each letter (A, B, …) to its text; the letters
 * are matched in upper case.
 */
export function selectedOption(answer: string, options: Readonly<Record<string, string>>): FastPath<string> {
  const letters = Object.keys(options).map((l) => l.toUpperCase());
  if (letters.length === 0) return undecided('the question has no options');

  const json = jsonObject(answer);
  if (json) {
    // The answer field, however capitalised (`{"Answer": "C) Third Law"}`).
    const field = (name: string) => Object.entries(json).find(([k]) => k.toLowerCase() === name)?.[1];
    const value = field('answer') ?? field('option') ?? field('choice');
    if (typeof value === 'string' && letters.includes(value.trim().replace(/[().]/g, '').toUpperCase())) {
      return { decided: true, value: value.trim().replace(/[().]/g, '').toUpperCase(), how: 'json' };
    }
    // A sentence in the answer field is read as an answer of its own, by the same rules.
    if (typeof value === 'string' && value.trim() !== '' && !jsonObject(value)) {
      const read = selectedOption(value, options);
      return read.decided ? { ...read, how: 'json-answer-text' } : read;
    }
    return undecided('a JSON answer without an option letter in answer/option/choice');
  }

  const text = answer.replace(/\*\*/g, '').trim();
  if (text === '') return undecided('no answer');
  const byRules = letterOrText(text, letters, options);
  if (byRules.decided) return byRules;
  // An answer that opens with its option and that option's text; when that is ambiguous too,
  // the general rules' reason stands.
  const leading = leadingOption(text, letters, options);
  return leading?.decided ? leading : byRules;
}

/** Words that deny every option: the option text they contain is not a selection. */
const NONE_OF = /\b(?:none of (?:the|these|them)|all of the (?:given|above|options))\b/i;

/**
 * The option a plain-text answer selects by the general rules: one explicit or marked letter
 * and no other, or the text of one option alone.
 */
function letterOrText(
  text: string,
  letters: string[],
  options: Readonly<Record<string, string>>,
): FastPath<string> {
  const set = `[${letters.join('')}]`;
  // The question echoed back: two or more options listed as "(A) …" / "A. …" at line starts or inline.
  const listed = new Set(
    [...text.matchAll(new RegExp(`(?:^|\\n|\\s)\\(?(${set})[).]\\s+\\S`, 'g'))].map((m) => m[1]!),
  );
  const explicit = new Set(
    [
      ...text.matchAll(
        new RegExp(`\\banswer(?:\\s+is)?\\s*[:=]?\\s*\\(?(${set})\\)?(?![\\p{L}\\p{N}])`, 'giu'),
      ),
    ].map((m) => m[1]!.toUpperCase()),
  );
  if (explicit.size === 1 && listed.size <= 1) {
    return { decided: true, value: [...explicit][0]!, how: 'letter' };
  }
  if (explicit.size > 1) return undecided(`several options named: ${[...explicit].sort().join(', ')}`);
  if (listed.size > 1) return undecided(`several options listed: ${[...listed].sort().join(', ')}`);

  const whole = new RegExp(`^\\(?(${set})\\)?[.:)]?$`).exec(text);
  if (whole) return { decided: true, value: whole[1]!, how: 'letter' };
  const marked = new Set(
    [
      ...text.matchAll(
        new RegExp(
          `(?:\\((${set})\\)|(?:^|\\s)(${set})[.):](?=\\s|$)|\\b(?:option|choice)\\s+(${set})(?![\\p{L}\\p{N}]))`,
          'giu',
        ),
      ),
    ].map((m) => (m[1] ?? m[2] ?? m[3])!.toUpperCase()),
  );
  // Any other bare capital option letter makes it ambiguous ("B is wrong, C is right"); a
  // capital A before a lower-case word is the article.
  const bare = new Set(
    [...text.matchAll(new RegExp(`(?<![\\p{L}\\p{N}])(${set})(?![\\p{L}\\p{N}])`, 'gu'))]
      .filter((m) => !(m[1] === 'A' && /^\s+[a-z]/.test(text.slice(m.index! + 1))))
      .map((m) => m[1]!),
  );
  if (marked.size === 1) {
    const [letter] = marked;
    const others = [...bare].filter((l) => l !== letter);
    if (others.length === 0) return { decided: true, value: letter!, how: 'letter' };
    return undecided(`option ${letter} marked, but ${others.join(', ')} also named`);
  }
  if (marked.size > 1) return undecided(`several options marked: ${[...marked].sort().join(', ')}`);
  if (bare.size > 0)
    return undecided(`an option letter without a clear selection: ${[...bare].sort().join(', ')}`);

  // No letter: the option whose text alone the answer states.
  if (NONE_OF.test(text)) return undecided('the answer denies the options ("none of the …")');
  const said = normalText(text);
  const stated = letters.filter((l) => {
    const option = normalText(options[l] ?? options[l.toLowerCase()] ?? '');
    return option !== '' && ` ${said} `.includes(` ${option} `);
  });
  // An option whose text is inside another stated option's text does not count on its own.
  const maximal = stated.filter(
    (l) => !stated.some((o) => o !== l && normalText(options[o]!).includes(normalText(options[l]!))),
  );
  if (maximal.length === 1) return { decided: true, value: maximal[0]!, how: 'option-text' };
  if (maximal.length > 1) return undecided(`the text of several options: ${maximal.join(', ')}`);
  return undecided('no option letter or option text');
}

const optionText = (options: Readonly<Record<string, string>>, letter: string) =>
  normalText(options[letter] ?? options[letter.toLowerCase()] ?? '');

/**
 * An answer that opens with its selection and that option's own text — `Answer: (B) Net torque
 * is zero.`, `[C] Moment of Inertia`, `(C) Kilogram is an SI base unit.`, `B. Dot product …` —
 * however it goes on to discuss the other options ("options (C) and (D) are incorrect"). When
 * the options' texts are unknown, only a bracketed letter or one after "Answer:" counts.
 * Undecided (undefined when the answer does not open so) when the rest of the answer names
 * another option with its text, or states another option as the answer.
 */
function leadingOption(
  text: string,
  letters: string[],
  options: Readonly<Record<string, string>>,
): FastPath<string> | undefined {
  const set = `[${letters.join('')}]`;
  const lead = new RegExp(
    `^(?:(?:the\\s+)?(?:correct\\s+)?answer(?:\\s+is)?\\s*[:=-]?\\s*)?(?:\\((${set})\\)|\\[(${set})\\]|(${set})[).:])(?=\\s)`,
    'i',
  ).exec(text);
  if (!lead) return undefined;
  const letter = (lead[1] ?? lead[2] ?? lead[3])!.toUpperCase();
  const rest = text.slice(lead[0].length);
  const known = letters.some((l) => optionText(options, l) !== '');
  if (known) {
    const own = optionText(options, letter);
    if (own === '' || !` ${normalText(rest)} `.startsWith(` ${own} `)) return undefined;
  } else if (!(lead[1] || lead[2] || /answer/i.test(lead[0]))) {
    return undefined;
  }
  // Another option named with its own text ("(B) Speed and (C) Acceleration vector"), or
  // stated as the answer ("… so the answer is (C)"), makes it ambiguous.
  const others = new Set<string>();
  for (const m of rest.matchAll(
    new RegExp(`(?:\\((${set})\\)|\\[(${set})\\]|(?<![\\p{L}\\p{N}])(${set})[).:])`, 'gu'),
  )) {
    const other = (m[1] ?? m[2] ?? m[3])!;
    if (other === letter) continue;
    const after = ` ${normalText(rest.slice(m.index! + m[0].length))} `;
    const its = optionText(options, other);
    if (its !== '' && after.startsWith(` ${its} `)) others.add(other);
  }
  for (const m of rest.matchAll(
    new RegExp(`\\banswer(?:\\s+is)?\\s*[:=]?\\s*\\(?(${set})\\)?(?![\\p{L}\\p{N}])`, 'giu'),
  )) {
    if (m[1]!.toUpperCase() !== letter) others.add(m[1]!.toUpperCase());
  }
  if (others.size > 0) {
    return undecided(`option ${letter} leads, but ${[...others].sort().join(', ')} also named as an answer`);
  }
  return { decided: true, value: letter, how: 'leading-option' };
}

export interface ReadNumber {
  value: number;
  /** The unit as written after the number, normalised (`m/s^2`); absent when none. */
  unit?: string;
}

/** LaTeX and typography into plain text: `$4.8\mathrm{~km}$` → `4.8 km`, `2.5 \times 10^{3}` → `2.5 × 10^3`. */
function plain(text: string): string {
  return text
    .replace(/\$/g, ' ')
    .replace(/\\(?:mathrm|text|mathit|operatorname|mbox)\s*\{([^}]*)\}/g, ' $1')
    .replace(/\\(?:times|cdot)/g, '×')
    .replace(/\\[,;!: ]|~/g, ' ')
    .replace(/\\(?:left|right)/g, '')
    .replace(/\^\{([^}]*)\}/g, '^$1')
    .replace(/[{}]/g, '')
    .replace(/−/g, '-')
    .replace(/\u00a0/g, ' ');
}

const NUMBER = String.raw`(?<![\w.])-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?(?:\s*[×x*]\s*10\s*(?:\^|\*\*)\s*\(?[-+]?\d+\)?)?|(?<![\w.])-?\.\d+(?:[eE][-+]?\d+)?`;
const UNIT_PART = String.raw`(?:[A-Za-zμΩÅ°%][A-Za-zμΩÅ°%]*(?:\s*(?:\^|\*\*)\s*-?\d+)?)`;
const UNIT = String.raw`${UNIT_PART}(?:\s*[/·*]\s*${UNIT_PART}|\s+(?=[A-Za-zμΩÅ]+\s*(?:\^|\*\*)\s*-?\d)${UNIT_PART})*`;
/** A number, then (optionally) its unit: the unit's exponents are not numbers of their own. */
const QUANTITY = new RegExp(`(${NUMBER})(?:\\s*(${UNIT}))?`, 'g');
/** Words after a number that are prose, not units. */
const NOT_UNITS = new Set([
  'and',
  'or',
  'is',
  'of',
  'to',
  'in',
  'the',
  'a',
  'an',
  'for',
  'at',
  'so',
  'which',
  'with',
  'times',
  'x',
]);

function numberOf(text: string): number {
  const [mantissa, power] = text.replace(/,/g, '').split(/\s*[×x*]\s*10\s*(?:\^|\*\*)\s*/);
  const base = Number(mantissa);
  return power === undefined ? base : base * 10 ** Number(power.replace(/[()]/g, ''));
}

function quantities(text: string): ReadNumber[] {
  const found: ReadNumber[] = [];
  for (const m of plain(text).matchAll(QUANTITY)) {
    const value = numberOf(m[1]!);
    if (!Number.isFinite(value)) continue;
    const unit = m[2]
      ?.replace(/\s*([/·*^])\s*/g, '$1')
      .replace(/\s+/g, ' ')
      .replace(/\*\*/g, '^');
    const word = m[2]?.trim().split(/\s+/)[0]?.toLowerCase();
    found.push(unit && word && !NOT_UNITS.has(word) ? { value, unit } : { value });
  }
  return found;
}

/** The final number an answer gives, with its unit; undecided when numbers compete or none is given. */
export function finalNumber(answer: string): FastPath<ReadNumber> {
  const json = jsonObject(answer);
  if (json) {
    const numeric = Object.entries(json).filter(
      ([, v]) => typeof v === 'number' || (typeof v === 'string' && quantities(v).length === 1),
    );
    const preferred =
      numeric.find(([k]) => /^(answer|value|result|final)/i.test(k)) ??
      (numeric.length === 1 ? numeric[0] : undefined);
    if (!preferred)
      return undecided(
        numeric.length === 0 ? 'a JSON answer without a number' : 'a JSON answer with several numbers',
      );
    const [, v] = preferred;
    return typeof v === 'number'
      ? { decided: true, value: { value: v }, how: 'json' }
      : { decided: true, value: quantities(v as string)[0]!, how: 'json' };
  }
  const text = plain(answer);
  if (text.trim() === '') return undecided('no answer');
  let candidates: ReadNumber[];
  let how: string;
  const answerMarker = [...text.matchAll(/\b(?:answer|result)\s*(?:is|:|=)/gi)].at(-1);
  if (answerMarker) {
    // "The answer is …": what follows the last such marker.
    candidates = quantities(text.slice(answerMarker.index! + answerMarker[0].length));
    how = 'answer-marker';
  } else if (text.includes('=') || text.includes('≈')) {
    // Each clause with an "=" gives the number after its last "=": a chain (a = 8/2 = 4) is
    // one clause; several assignments (v = 3 m/s and t = 2 s) must agree.
    candidates = text
      .split(/,(?!\d{3}(?!\d))|[;\n]|\band\b|\.\s/)
      .filter((clause) => /[=≈]/.test(clause))
      .map((clause) =>
        quantities(clause.slice(Math.max(clause.lastIndexOf('='), clause.lastIndexOf('≈')) + 1)).at(-1),
      )
      .filter((q): q is ReadNumber => q !== undefined);
    how = 'final-number';
  } else {
    candidates = quantities(text);
    how = 'only-number';
  }
  const agreed = oneValue(candidates);
  if (agreed) return { decided: true, value: agreed, how };
  // A worked answer ends on its result: a last sentence that states one number decides
  // (`… So, the torque is 2 Newton-meters (Nm).`); one that states several does not.
  if (how !== 'answer-marker') {
    const last = lastSentence(text);
    const stated = last === undefined ? undefined : oneValue(quantities(last));
    if (stated && last !== text.trim()) return { decided: true, value: stated, how: 'last-sentence' };
  }
  if (candidates.length === 0) return undecided('no number');
  return undecided(`competing numbers: ${candidates.map((q) => q.value).join(', ')}`);
}

/** The one value all these numbers give (with a unit when one has it); undefined when none or they differ. */
function oneValue(candidates: ReadNumber[]): ReadNumber | undefined {
  const first = candidates[0];
  if (!first) return undefined;
  const same = candidates.every(
    (q) => Math.abs(q.value - first.value) <= 1e-9 * Math.max(1, Math.abs(first.value)),
  );
  return same ? (candidates.find((q) => q.unit) ?? first) : undefined;
}

/**
 * The answer's last sentence or line, when it is a statement of a result: it says what
 * something is (`is`, `are`, `equals`, `=`, `≈`). A full stop ends a sentence; a decimal point
 * (`2.11`) or an abbreviation before a lower-case word (`5 N.s`) does not.
 */
function lastSentence(text: string): string | undefined {
  const sentences = text
    .split(/\n|(?<=[.!?])\s+(?=[^a-z\s])/)
    .map((s) => s.trim())
    .filter((s) => /[\p{L}\p{N}]/u.test(s));
  const last = sentences.at(-1);
  if (!last || !/[=≈]|\b(?:is|are|was|equals?|becomes)\b/i.test(last)) return undefined;
  // A closing note or assumption (`Note: g = 9.8 m/s^2 is assumed.`) is not the result.
  if (/^(?:notes?|assum\w*|where|here|given|if|using|with|recall)\b/i.test(last)) return undefined;
  return last;
}

/** Whether a value is within a relative tolerance of the key (absolute when the key is 0). */
export function withinTolerance(value: number, key: number, tolerance = 0.05): boolean {
  return Math.abs(value - key) <= tolerance * (key === 0 ? 1 : Math.abs(key)) + 1e-12;
}

/** Options listed inline in a question, `… (A) Newton (B) Joule (C) Kilogram (D) Watt`, by letter; {} when none. */
export function optionsInQuestion(question: string): Record<string, string> {
  const options: Record<string, string> = {};
  const marks = [...question.matchAll(/\(([A-H])\)\s*/g)];
  // Letters must run A, B, C… in order: "(B)" inside a sentence is not an option list.
  if (marks.length < 2 || marks.some((m, i) => m[1] !== String.fromCharCode(65 + i))) return {};
  marks.forEach((m, i) => {
    const end = marks[i + 1]?.index ?? question.length;
    options[m[1]!] = question.slice(m.index! + m[0].length, end).trim();
  });
  return options;
}

/** `text`: a short answer matched against the acceptable answers (see answer-match.ts), never by the fast path. */
export type QuestionType = 'mcq' | 'numeric' | 'explanation' | 'text';

export type FastGrade =
  | { decided: true; correct: boolean; extracted: string; decidedBy: string }
  | { decided: false; reason: string };

export interface FastGradeOptions {
  /** MCQ options by letter; default: listed in the question. */
  options?: Readonly<Record<string, string>>;
  question?: string;
  /** Relative tolerance of numeric answers (default 5%). */
  tolerance?: number;
  /** The key's unit, when the dataset gives one apart (SciBench): another unit in the answer goes to the LLM. */
  keyUnit?: string;
}

const unitKey = (unit: string) => unit.replace(/[\s·*]/g, '').replace(/\*\*/g, '^');

/**
 * The fast verdict on an answer against its key, or undecided (the LLM grader's job): an
 * explanation always; an MCQ answer whose selection is unclear; a numeric answer without one
 * final number, or with a unit other than the key's.
 */
export function fastGrade(
  type: QuestionType,
  answer: string,
  key: string,
  options: FastGradeOptions = {},
): FastGrade {
  if (type === 'explanation') return undecided('explanations are graded by the LLM');
  if (type === 'text') return undecided('text answers are matched against the acceptable answers');
  if (type === 'mcq') {
    const keyLetter = key.trim().replace(/[().]/g, '').toUpperCase();
    const choices = options.options ?? optionsInQuestion(options.question ?? '');
    const letters = Object.keys(choices).length > 0 ? choices : { A: '', B: '', C: '', D: '' };
    if (!(keyLetter in letters)) return undecided(`the key ${JSON.stringify(key)} is not an option letter`);
    const selected = selectedOption(answer, letters);
    if (!selected.decided) return selected;
    return {
      decided: true,
      correct: selected.value === keyLetter,
      extracted: selected.value,
      decidedBy: `fast:${selected.how}`,
    };
  }
  const keyNumber = finalNumber(key);
  if (!keyNumber.decided) return undecided(`the key ${JSON.stringify(key)} is not one number`);
  const read = finalNumber(answer);
  if (!read.decided) return read;
  // The key's unit may carry a scale, as SciBench writes it: 2 in "10^6 m" is 2 × 10^6 m.
  const written = plain(options.keyUnit ?? '').trim() || keyNumber.value.unit || '';
  const scaled = /^10\s*\^\s*(-?\d+)\s*(.*)$/.exec(written);
  const scale = scaled ? 10 ** Number(scaled[1]) : 1;
  const keyUnit = (scaled ? scaled[2]! : written).trim();
  if (keyUnit && read.value.unit && unitKey(keyUnit) !== unitKey(read.value.unit)) {
    return undecided(`unit ${read.value.unit} where the key is in ${keyUnit}`);
  }
  if (scale !== 1 && !read.value.unit) {
    return undecided(`a number without its unit where the key is in 10^${Math.log10(scale)} ${keyUnit}`);
  }
  return {
    decided: true,
    correct: withinTolerance(read.value.value, keyNumber.value.value * scale, options.tolerance),
    extracted: `${read.value.value}${read.value.unit ? ` ${read.value.unit}` : ''}`,
    decidedBy: `fast:${read.how}`,
  };
}
