/**
 * The gate condition parser reads a condition in time linear in its length: spaces anywhere
 * (inside `where words( … )`, between the words of a metric, before a slice) cost no more than
 * reading them, and a condition it cannot read is refused with the usual message. The vitest
 * timeout is the bound: the regular expression it replaced took 30 s at 4,000 spaces.
 */
import { describe, expect, it } from 'vitest';
import { GateSyntaxError, parseCondition, parseMetric } from '../../shared/lib/gate.js';

const SPACES = ' '.repeat(100_000);

describe('gate conditions with 100,000 spaces', { timeout: 10_000 }, () => {
  it('parses them inside where words( … ), the column trimmed', () => {
    const c = parseCondition(`p50 latency where words(${SPACES}transcript${SPACES}) >= 150 < baseline`);
    expect(c.metric).toEqual({
      kind: 'latency',
      percentile: 50,
      slice: { measure: 'words', column: 'transcript', op: '>=', value: 150 },
    });
    expect(c.rhs).toEqual({ kind: 'baseline', offset: 0 });
  });

  it('parses them between every part of a condition', () => {
    const spaced = ['delta', 'accuracy[lang=de]', '>', '-0.02', 'with', 'p', '<', '0.05'].join(SPACES);
    const c = parseCondition(`${SPACES}${spaced}${SPACES}`);
    expect(c).toMatchObject({
      delta: true,
      metric: { kind: 'named', name: 'accuracy', slice: { column: 'lang', value: 'de' } },
      op: '>',
      rhs: { kind: 'number', value: -0.02 },
      alpha: 0.05,
    });
    expect(parseCondition(`cost${SPACES}per${SPACES}10k <= 2`).metric).toEqual({ kind: 'cost' });
  });

  it.each([
    ['an unclosed words(', `p50 latency where words(${SPACES}transcript${SPACES}`],
    ['an empty words( )', `p50 latency where words(${SPACES}) >= 150 < baseline`],
    ['a where clause without its number', `p50 latency where words(transcript)${SPACES}>=${SPACES}< 1`],
    ['an unclosed slice', `accuracy${SPACES}[${SPACES}lang=de${SPACES}>= 0.8`],
    ['a trailing word', `accuracy >= 0.8${SPACES}with${SPACES}p${SPACES}`],
  ])('refuses %s with the usual message', (_, text) => {
    expect(() => parseCondition(text)).toThrow(GateSyntaxError);
    expect(() => parseCondition(text)).toThrow(/^gate condition ".*" is not \[delta\] <metric>/s);
  });

  it('reads a metric named with spaces in it (rankBy) as quickly', () => {
    expect(parseMetric(`p95${SPACES}latency`)).toEqual({ kind: 'latency', percentile: 95 });
    expect(() => parseMetric(`accuracy${SPACES}[x`)).toThrow(GateSyntaxError);
  });
});

describe('the parser reads what the grammar says, no more', () => {
  it.each([
    // A leading "delta" not followed by a metric is the metric's own name.
    ['delta > 0', { delta: false, metric: { kind: 'named', name: 'delta' } }],
    ['DELTA Accuracy >= 0.1', { delta: true, metric: { kind: 'named', name: 'Accuracy' } }],
    // "p123 latency" is no percentile; "p5.5 latency" is.
    ['p5.5 latency <= 3', { metric: { kind: 'latency', percentile: 5.5 } }],
    ['accuracy >= 1E-3', { rhs: { kind: 'number', value: 0.001 } }],
    ['accuracy>=baseline+0.05', { rhs: { kind: 'baseline', offset: 0.05 } }],
    ['delta kappa > - noise', { rhs: { kind: 'noise', sign: -1 } }],
  ])('%s', (text, expected) => {
    expect(parseCondition(text)).toMatchObject(expected);
  });

  it.each([
    'p123 latency < 3',
    'accuracy >= 5-3',
    'accuracy >= .5',
    'accuracy >= 1e+5',
    'accuracy >= baseline - -0.05',
    'accuracy >= 0.8with p < 0.05',
    'accuracy >= 0.8 with p <= 0.05',
    'p50 latency where words() >= 3 < 1',
    'cost per 10kx <= 2',
  ])('refuses %s', (text) => {
    expect(() => parseCondition(text)).toThrow(/is not \[delta\] <metric>/);
  });
});
