/**
 * The patterns a suite gives (`dataset.extract`) run in linear time: RE2's syntax, a length and
 * a size cap, and the constructs RE2 lacks refused at suite load with the reason; suite names
 * capped so the file names and object keys built from them fit.
 */
import { describe, expect, it } from 'vitest';
import { rowReader } from '../../shared/family/dataset-row.js';
import {
  compilePattern,
  MAX_PATTERN_CHARS,
  PatternError,
  patternProblem,
  unsupportedConstruct,
} from '../../shared/model/patterns.js';
import { MAX_NAME_CHARS } from '../../shared/model/suite-base.js';
import { validateSuite, variantSuites } from '../../shared/registry/suite.js';
import { suite, suiteInput } from '../helpers.js';

const HOSTILE = '^((?:a+)+)$';

describe('compilePattern', () => {
  it('matches the nested repetition that JavaScript backtracks on, on a 40-character field, at once', () => {
    const pattern = compilePattern(HOSTILE);
    // JavaScript's RegExp doubles its time with each character here: 40 would take hours.
    expect(pattern.exec(`${'a'.repeat(40)}!`)).toBeUndefined();
    expect(pattern.exec('a'.repeat(40))).toEqual({ group: 'a'.repeat(40) });
    // And on a field as long as dataset.maxFieldChars allows by default.
    expect(pattern.exec(`${'a'.repeat(20_000)}!`)).toBeUndefined();
  });

  it('gives capture group 1 of the first match, as RegExp.exec did', () => {
    const gsm8k = compilePattern('####\\s*([-0-9.,]+)\\s*$');
    expect(gsm8k.groups).toBe(1);
    expect(gsm8k.exec('She has 1,234 eggs.\n#### 1,234\n')).toEqual({ group: '1,234' });
    expect(gsm8k.exec('no marker here')).toBeUndefined();
    expect(compilePattern('a(b)').exec('zzab')).toEqual({ group: 'b' });
    // A group that takes no part in the match gives "".
    expect(compilePattern('(x)?y').exec('zy')).toEqual({ group: '' });
    expect(compilePattern('(?:a)(b)|c').exec('c')).toEqual({ group: '' });
    // JavaScript spellings RE2 lacks are translated; a named group is a group.
    expect(compilePattern('(?<answer>\\u00e9+)').exec('café')).toEqual({ group: 'é' });
    expect(compilePattern('(\\d+)/(?:\\d+)').groups).toBe(1);
    expect(compilePattern('(?i)answer: (\\w)').exec('ANSWER: b')).toEqual({ group: 'b' });
  });

  it.each([
    ['(a)\\1', /backreference \(\\1\)/],
    ['(?<q>a)\\k<q>', /named backreference/],
    ['(?=a)(a)', /lookahead \(\(\?=…\)\)/],
    ['(?!a)(b)', /lookahead \(\(\?!…\)\)/],
    ['(?<=a)(b)', /lookbehind \(\(\?<=…\)\)/],
    ['(?<!a)(b)', /lookbehind \(\(\?<!…\)\)/],
    ['(?>a)(b)', /atomic group/],
  ])('refuses %s, naming the construct and that patterns run in linear time', (source, construct) => {
    expect(() => compilePattern(source)).toThrow(PatternError);
    const problem = patternProblem(source)!;
    expect(problem).toMatch(construct);
    expect(problem).toContain('patterns are RE2 syntax and run in linear time');
  });

  it('reads escapes and character classes: a \\1 or (?= inside them is no construct', () => {
    expect(unsupportedConstruct('\\\\1(a)')).toBeUndefined();
    expect(unsupportedConstruct('[(?=](a)')).toBeUndefined();
    expect(unsupportedConstruct('[\\]](?=x)')).toMatch(/lookahead/);
    expect(unsupportedConstruct('[]](a)\\2')).toMatch(/backreference \(\\2\)/);
  });

  it('caps the length and the compiled size of a pattern, saying the limit and what to do', () => {
    // A class of many letters is one step: long, yet small once compiled.
    expect(patternProblem(`([${'a'.repeat(MAX_PATTERN_CHARS - 4)}])`)).toBeUndefined();
    expect(patternProblem(`([${'a'.repeat(MAX_PATTERN_CHARS - 3)}])`)).toBe(
      'the pattern has 1001 characters, more than 1,000: patterns are RE2 syntax and run in linear time, with a bounded length; match only the part around what you keep',
    );
    expect(patternProblem('(\\pL{0,999})')).toMatch(
      /^the pattern compiles to \d+ steps, more than 1,000: .*use smaller repeat counts/,
    );
    expect(patternProblem('(a{2000})')).toMatch(/not a regular expression RE2 reads.*invalid repeat count/);
  });

  it('says what RE2 cannot read and where', () => {
    expect(patternProblem('(a')).toBe(
      'the pattern is not a regular expression RE2 reads (patterns are RE2 syntax and run in linear time): missing closing ) at `(a`',
    );
    expect(patternProblem('a++(b)')).toMatch(/invalid nested repetition operator at `\+\+`/);
  });
});

describe('dataset.extract at suite load', () => {
  const judge = (extract: Record<string, string>) =>
    validateSuite(
      {
        version: 1,
        name: 'x',
        task: 'judge',
        dataset: { path: 'd.jsonl', extract },
        judge: { prompt: 'j.md', labels: ['a', 'b'] },
        backends: ['sim:x'],
      },
      'suite.json',
    );

  it('refuses a backreference with the reason, under the role it is given for', () => {
    expect(() => judge({ gold: '(a)\\1' })).toThrow(
      /suite\.json: invalid suite\n {2}- dataset\.extract\.gold: the pattern uses a backreference \(\\1\): patterns are RE2 syntax and run in linear time/,
    );
  });

  it('keeps the one-capture-group rule, counted by RE2', () => {
    expect(() => judge({ gold: '(?<a>x)(y)' })).toThrow(/exactly one capture group.*it has 2/);
    expect(() => judge({ gold: '(?P<a>x)y' })).not.toThrow();
  });

  it('extracts with the hostile pattern on a row at once; a field it does not match is an invalid row', () => {
    const reader = rowReader(judge({ gold: HOSTILE }));
    const matched = reader.read({ question: 'q', gold: 'a'.repeat(40) });
    expect(matched.record.gold).toBe('a'.repeat(40));
    expect(matched.problem()).toBeUndefined();
    const refused = reader.read({ question: 'q', gold: `${'a'.repeat(40)}!` });
    expect(refused.problem()).toMatch(
      /^gold "a+!" does not match dataset\.extract\.gold \(\^\(\(\?:a\+\)\+\)\$\)$/,
    );
  });
});

describe('suite names', () => {
  it(`are at most ${MAX_NAME_CHARS} characters: file names and object keys are built from them`, () => {
    expect(suite({ name: 'n'.repeat(MAX_NAME_CHARS) }).name).toHaveLength(MAX_NAME_CHARS);
    expect(() => suite({ name: 'n'.repeat(MAX_NAME_CHARS + 1) })).toThrow(
      /- name: at most 100 characters: file names and S3 object keys are built from it/,
    );
  });

  it("count a sweep variant's runs, <suite>.<variant>, named by the variant in the message", () => {
    const sweep = (variant: string) =>
      validateSuite(
        {
          ...suiteInput({ name: 's'.repeat(60) }),
          variants: [{ name: 'base' }, { name: variant, params: { temperature: 0.5 } }],
        },
        'suite.json',
      );
    expect(variantSuites(sweep('v'.repeat(39))).map((v) => v.suite.name.length)).toEqual([65, 100]);
    expect(() => sweep('v'.repeat(40))).toThrow(
      new RegExp(
        `suite\\.json: invalid suite\\n {2}- variants\\.${'v'.repeat(40)}\\.name: at most 100 characters`,
      ),
    );
  });
});
