import { describe, expect, it } from 'vitest';
import { GEC_LABELS, type GecLabel } from '../../../shared/families/gec/labels.js';
import {
  canonicalLabel,
  parseAgentStep,
  parseLabelText,
  parsePairCorrectness,
  parseScore,
} from '../../../shared/families/gec/parsers.js';

const FEEDBACK: readonly GecLabel[] = ['TP', 'FP1', 'FP2', 'FP3'];

describe('canonicalLabel', () => {
  it.each([
    ['TP', 'TP'],
    ['FP 2', 'FP2'],
    ['fp-2', 'FP2'],
    ['FP_2', 'FP2'],
    ['**FP2**', 'FP2'],
    ['"tp"', 'TP'],
    ['`fn`', 'FN'],
    ['[FP3]', 'FP3'],
    ['  Tn. ', 'TN'],
    ['“FP1”', 'FP1'],
  ])('%j → %s', (token, label) => {
    expect(canonicalLabel(token)).toBe(label);
  });

  it.each([
    'TPS',
    'FP21',
    'FP',
    'FP4',
    'TP2',
    'TP-2',
    'STP',
    'is_TP',
    'TP_label',
    'FP2x',
    'true positive',
    '',
  ])('%j is not a label', (token) => {
    expect(canonicalLabel(token)).toBeUndefined();
  });
});

describe('parseLabelText', () => {
  it.each([
    ['bare label', 'FP2', 'FP2', ''],
    [
      'key line with reason',
      'Final Answer: FP2 - introduces an agreement error',
      'FP2',
      'introduces an agreement error',
    ],
    [
      'chatter around a bold answer',
      'Let me think. The original has a typo, and TP would need a real fix.\n\n**Final Answer:** **FP3** — purely stylistic\n\nHope this helps!',
      'FP3',
      'purely stylistic',
    ],
    ['lower case key and label', 'final answer: fp 1: meaning flipped', 'FP1', 'meaning flipped'],
    [
      'bold key with the label on the next line',
      '**Final Answer:**\n\n`FP_2` - tense error',
      'FP2',
      'tense error',
    ],
    ['Label: line', 'Analysis...\nLabel: "tp"', 'TP', ''],
    ['Classification: line', '## Result\nClassification: FP-3 - preference only', 'FP3', 'preference only'],
    [
      'Final Answer outranks an earlier Classification',
      'Classification: TP\nOn reflection the comma is wrong.\nFinal Answer: FP2 - comma splice',
      'FP2',
      'comma splice',
    ],
    [
      'the last readable Final Answer wins (revision)',
      'Final Answer: TP - looks fine\nWait, "their" became "there".\nFinal Answer: FP2 - wrong word',
      'FP2',
      'wrong word',
    ],
    [
      'an echoed format is not an answer',
      'I must answer as Final Answer: [TP|FP1|FP2|FP3] - [brief reason]\nFinal Answer: TP - fixes the verb',
      'TP',
      'fixes the verb',
    ],
    [
      'JSON in a fence',
      'Here you go:\n```json\n{"label": "FP 1", "reason": "changes \\"not\\" to \\"now\\""}\n```',
      'FP1',
      'changes "not" to "now"',
    ],
    [
      'prose: first label-like token, ignoring TPS and a listed echo',
      'Options are TP/FP1/FP2/FP3. The TPS report aside, this is clearly FP3: stylistic.',
      'FP3',
      'stylistic.',
    ],
  ])('%s', (_name, text, label, reason) => {
    expect(parseLabelText(text, GEC_LABELS)).toEqual({ ok: true, value: { label, reason } });
  });

  it('rejects TN for the feedback judge, naming the allowed labels', () => {
    const parsed = parseLabelText('Final Answer: TN - nothing to fix', FEEDBACK);
    expect(parsed.ok).toBe(false);
    expect(!parsed.ok && parsed.problem).toMatch(/TN.*TP, FP1, FP2, FP3/);
  });

  it('accepts TN for the edit judge', () => {
    expect(parseLabelText('Final Answer: TN - nothing to fix', GEC_LABELS)).toEqual({
      ok: true,
      value: { label: 'TN', reason: 'nothing to fix' },
    });
  });

  it.each([
    ['no label at all', 'The sentence is grammatical and the edit is fine.'],
    ['only the echoed format', 'Final Answer: [TP|FP1|FP2|FP3] - [brief reason]'],
    ['label-like words only', 'FP21 TPS STP FP'],
    ['empty', ''],
  ])('%s is a problem', (_name, text) => {
    const parsed = parseLabelText(text, FEEDBACK);
    expect(parsed.ok).toBe(false);
    expect(!parsed.ok && parsed.problem).toMatch(/no label/);
  });
});

describe('parseScore', () => {
  it.each([
    ['plain', 'SCORE: 2\nREASON: medium confusion', 'SCORE', -1, 3, 2, 'medium confusion'],
    ['bold key and value', '**SCORE:** **-1**\n**REASON:** clearer now', 'SCORE', -1, 3, -1, 'clearer now'],
    ['lower case, unicode minus', 'score: −1\nreason: less nonsense', 'SCORE', -1, 3, -1, 'less nonsense'],
    [
      'plus sign and REASONING',
      'IMPROVEMENT: +2\nREASONING: fixes agreement',
      'IMPROVEMENT',
      -3,
      3,
      2,
      'fixes agreement',
    ],
    ['en dash as minus', 'IMPROVEMENT: –3 (much worse)', 'IMPROVEMENT', -3, 3, -3, ''],
    ['missing reason', 'SEVERITY: 0', 'SEVERITY', 0, 4, 0, ''],
    [
      'filled-in brackets',
      'SEVERITY: [3]\nREASONING: the date changed',
      'SEVERITY',
      0,
      4,
      3,
      'the date changed',
    ],
    [
      'scale echoed first, answer after',
      'Return format:\nSCORE: [-1 to 3]\nREASON: [brief explanation]\n\nSCORE: 1\nREASON: slightly awkward',
      'SCORE',
      -1,
      3,
      1,
      'slightly awkward',
    ],
    [
      'echo without brackets, in a fence',
      '```\nSEVERITY: 0-4\nSEVERITY: 2\nREASONING: emphasis shifts\n```\nanything else',
      'SEVERITY',
      0,
      4,
      2,
      'emphasis shifts',
    ],
    [
      'restated: the last valid occurrence wins',
      'IMPROVEMENT: -3 to +3\nI first thought IMPROVEMENT: 1 but\nIMPROVEMENT: 2\nREASONING: fixes two errors',
      'IMPROVEMENT',
      -3,
      3,
      2,
      'fixes two errors',
    ],
    [
      'a later out-of-range value does not beat a valid one',
      'SCORE: 2\nREASON: noticeable\nSCORE: 7',
      'SCORE',
      -1,
      3,
      2,
      'noticeable',
    ],
    [
      'multi-line reason stops at the next key',
      'SEVERITY: 1\nREASONING: style only;\nthe core meaning stays.\nCONFIDENCE: high',
      'SEVERITY',
      0,
      4,
      1,
      'style only;\nthe core meaning stays.',
    ],
    [
      'reason before the score, a number in prose after',
      'REASONING: "went" vs "goes" changes tense.\nSEVERITY: 2\nThe severity is 2 of 4.',
      'SEVERITY',
      0,
      4,
      2,
      '"went" vs "goes" changes tense.',
    ],
    ['JSON-ish line', '{"score": 3, "reason": "uninterpretable"}', 'SCORE', -1, 3, 3, ''],
    [
      'value on the line after a bare bold key',
      '**SEVERITY:**\n**1**\nREASONING: tone only',
      'SEVERITY',
      0,
      4,
      1,
      'tone only',
    ],
    ['prefixed key', 'Meaning change severity: 4 - contradiction', 'SEVERITY', 0, 4, 4, ''],
    [
      'a score word in the reason is not a key',
      'SCORE: 0\nREASON: a score: 3 would be harsh',
      'SCORE',
      -1,
      3,
      0,
      'a score: 3 would be harsh',
    ],
  ] as const)('%s', (_name, text, key, min, max, value, reason) => {
    expect(parseScore(text, key, min, max)).toEqual({ ok: true, value: { value, reason } });
  });

  it.each([
    ['out of range', 'SEVERITY: 5\nREASONING: huge', 'SEVERITY', 0, 4, /5 is out of range 0\.\.4/],
    ['negative severity', 'SEVERITY: -1', 'SEVERITY', 0, 4, /-1 is out of range/],
    ['non-integer', 'SCORE: 2.5\nREASON: between medium and major', 'SCORE', -1, 3, /2\.5 is not an integer/],
    ['negative non-integer', 'IMPROVEMENT: −1.5', 'IMPROVEMENT', -3, 3, /−1\.5 is not an integer/],
    ['comma decimal', 'IMPROVEMENT: +1,5', 'IMPROVEMENT', -3, 3, /1,5 is not an integer/],
    ['a word, not a number', 'SCORE: medium', 'SCORE', -1, 3, /no number/],
    ['only the echoed scale', 'SCORE: [-1 to 3]\nREASON: [brief explanation]', 'SCORE', -1, 3, /no SCORE/],
    ['wrong key', 'SEVERITY: 2', 'SCORE', -1, 3, /no SCORE/],
    ['"SCORE SCALE:" is not the key', 'SCORE SCALE:\n-1: Reduced nonsense', 'SCORE', -1, 3, /no SCORE/],
  ] as const)('%s is a problem', (_name, text, key, min, max, problem) => {
    const parsed = parseScore(text, key, min, max);
    expect(parsed.ok).toBe(false);
    expect(!parsed.ok && parsed.problem).toMatch(problem);
  });

  it('returns 0, not -0, for "-0"', () => {
    const parsed = parseScore('IMPROVEMENT: -0', 'IMPROVEMENT', -3, 3);
    expect(parsed.ok && Object.is(parsed.value.value, 0)).toBe(true);
  });
});

describe('parsePairCorrectness', () => {
  it.each([
    [
      'JSON booleans in a fence',
      'Sure!\n```json\n{"source_correct": false, "target_correct": true, "reason": "fixes the article"}\n```',
      false,
      true,
      'fixes the article',
    ],
    [
      'JSON yes/no strings',
      '{"source_correct": "Yes", "target_correct": "no", "reasoning": " broke it "}',
      true,
      false,
      'broke it',
    ],
    [
      'camelCase JSON keys',
      'Result: {"sourceCorrect": "false", "targetCorrect": "true"} done',
      false,
      true,
      '',
    ],
    [
      'lines with a multi-line reason',
      'SOURCE_CORRECT: no\nTARGET_CORRECT: yes\nREASON: the verb now agrees\nwith its subject.',
      false,
      true,
      'the verb now agrees\nwith its subject.',
    ],
    [
      'loose keys and values',
      '**Source correct:** incorrect\n- target-correct: Correct\nReasoning: fixed',
      false,
      true,
      'fixed',
    ],
    [
      'format echo then answer',
      'SOURCE_CORRECT: [yes/no]\nTARGET_CORRECT: [yes/no]\n\nSOURCE_CORRECT: TRUE\nTARGET_CORRECT: false',
      true,
      false,
      '',
    ],
    ['Source-Correct with equals', 'Source-Correct = yes\nTarget-Correct = yes', true, true, ''],
  ])('%s', (_name, text, sourceCorrect, targetCorrect, reason) => {
    expect(parsePairCorrectness(text)).toEqual({ ok: true, value: { sourceCorrect, targetCorrect, reason } });
  });

  it.each([
    ['a missing field', 'SOURCE_CORRECT: yes\nREASON: fine', /missing TARGET_CORRECT/],
    ['both missing', 'The source is fine and so is the target.', /SOURCE_CORRECT and TARGET_CORRECT/],
    ['an unreadable value', '{"source_correct": "maybe", "target_correct": true}', /missing SOURCE_CORRECT/],
  ])('%s is a problem', (_name, text, problem) => {
    const parsed = parsePairCorrectness(text);
    expect(parsed.ok).toBe(false);
    expect(!parsed.ok && parsed.problem).toMatch(problem);
  });
});

describe('parseAgentStep', () => {
  it.each([
    [
      'simple action',
      'Thought: I should check if this introduces nonsense.\nAction: nonsense_detector(She go to school.)',
      'nonsense_detector',
      ['She go to school.'],
      'nonsense_detector(She go to school.)',
    ],
    [
      'quoted args keep commas and escapes',
      'Action: meaning_change("Yes, I did.", "No, I didn\'t \\"do\\" it.")',
      'meaning_change',
      ['Yes, I did.', 'No, I didn\'t "do" it.'],
      'meaning_change("Yes, I did.", "No, I didn\'t \\"do\\" it.")',
    ],
    [
      'single and curly quotes, apostrophes inside',
      "Action: grammar_rag('It's raining, isn't it?', “English”)",
      'grammar_rag',
      ["It's raining, isn't it?", 'English'],
      'grammar_rag("It\'s raining, isn\'t it?", English)',
    ],
    [
      'unquoted args trimmed, inner parens kept',
      'Action: comprehensive_analysis( He said (quietly) hi ,He said hi ,  English )',
      'comprehensive_analysis',
      ['He said (quietly) hi', 'He said hi', 'English'],
      'comprehensive_analysis("He said (quietly) hi", He said hi, English)',
    ],
    ['empty parens', 'Action: list_tools()', 'list_tools', [], 'list_tools()'],
    [
      'an unclosed quote runs to the closing paren',
      'Action: nonsense_detector("Well, it is done.)',
      'nonsense_detector',
      ['Well, it is done.'],
      'nonsense_detector("Well, it is done.")',
    ],
    [
      'backticks and bold',
      '**Action:** `reward_quality(I has a cat, I have a cat)`',
      'reward_quality',
      ['I has a cat', 'I have a cat'],
      'reward_quality(I has a cat, I have a cat)',
    ],
    [
      'missing closing paren at the end of the line',
      'Action: nonsense_detector(Colorless green ideas\nThought: wait',
      'nonsense_detector',
      ['Colorless green ideas'],
      'nonsense_detector(Colorless green ideas)',
    ],
    [
      'LangChain Action Input',
      'Thought: compare them\nAction: meaning_change\nAction Input: "I am here, now", I was here',
      'meaning_change',
      ['I am here, now', 'I was here'],
      'meaning_change("I am here, now", I was here)',
    ],
    [
      'LangChain Action Input as JSON',
      'Action: `grammar_rag`\nAction Input: {"text": "Ich habe gegangen", "language": "German"}',
      'grammar_rag',
      ['Ich habe gegangen', 'German'],
      'grammar_rag(Ich habe gegangen, German)',
    ],
    [
      'tool name after prose on the Action line',
      'Action: I will call nonsense_detector(text here)',
      'nonsense_detector',
      ['text here'],
      'nonsense_detector(text here)',
    ],
    [
      'hallucinated Observation and Final Answer are ignored',
      'Action: meaning_change(a, b)\nObservation: SEVERITY: 0\nThought: fine\nFinal Answer: TP - ok',
      'meaning_change',
      ['a', 'b'],
      'meaning_change(a, b)',
    ],
    [
      'an action before a final answer runs first',
      'Action: reward_quality(x, y)\nFinal Answer: TP - probably fine',
      'reward_quality',
      ['x', 'y'],
      'reward_quality(x, y)',
    ],
    [
      'unknown tool names are not validated here',
      'action: web_search(GEC)',
      'web_search',
      ['GEC'],
      'web_search(GEC)',
    ],
  ])('%s', (_name, text, tool, args, call) => {
    expect(parseAgentStep(text, FEEDBACK)).toEqual({ kind: 'action', tool, args, call });
  });

  it.each([
    [
      'plain',
      'Thought: the edit fixes agreement.\nFinal Answer: TP - fixes subject-verb agreement',
      'TP',
      'fixes subject-verb agreement',
    ],
    ['lenient label', 'Final Answer: **fp 2** — introduces a tense error', 'FP2', 'introduces a tense error'],
    [
      'everything after a hallucinated Observation is ignored',
      'Thought: I know enough.\nFinal Answer: FP3 - stylistic\nObservation: Action: nonsense_detector(x)',
      'FP3',
      'stylistic',
    ],
    [
      'Action: None does not count as an action',
      'Action: None\nFinal Answer: FP1: nonsense',
      'FP1',
      'nonsense',
    ],
  ])('final: %s', (_name, text, label, reason) => {
    expect(parseAgentStep(text, FEEDBACK)).toEqual({ kind: 'final', label, reason });
  });

  it('TN is final for the edit judge but malformed for the feedback judge', () => {
    const text = 'Final Answer: TN - no edit and none needed';
    expect(parseAgentStep(text, GEC_LABELS)).toEqual({
      kind: 'final',
      label: 'TN',
      reason: 'no edit and none needed',
    });
    const step = parseAgentStep(text, FEEDBACK);
    expect(step.kind).toBe('malformed');
    expect(step.kind === 'malformed' && step.problem).toMatch(/TN.*TP, FP1, FP2, FP3/);
  });

  it.each([
    ['no action or final answer', 'Thought: let me think about this more.', /no Action or Final Answer/],
    [
      'a hallucinated Observation hides the final answer',
      'Thought: hmm\nObservation: the tool says fine\nFinal Answer: TP',
      /no Action or Final Answer/,
    ],
    ['unreadable action', 'Action: check the meaning with the tool', /could not read the action/],
    ['empty action', 'Action:\nFinal Answer: TP', /could not read the action/],
    [
      'unreadable label',
      'Final Answer: Correct - the edit is good',
      /could not read a label.*TP, FP1, FP2, FP3/,
    ],
    ['echoed label format', 'Final Answer: [TP/FP1/FP2/FP3] - [brief reason]', /could not read a label/],
  ])('malformed: %s', (_name, text, problem) => {
    const step = parseAgentStep(text, FEEDBACK);
    expect(step.kind).toBe('malformed');
    expect(step.kind === 'malformed' && step.problem).toMatch(problem);
  });
});
