/**
 * Which numeric ranges are ordinal scales: a range with whole-number bounds and at least three
 * points ([1, 5]) is one unless the suite says `ordinal: false`; a [0, 1] range (fractional
 * answers, often against 0/1 gold) is not unless the suite says `ordinal: true`. A scale adds
 * the quadratic weighted kappa against gold; figures worked by hand.
 */
import { describe, expect, it } from 'vitest';
import { WITHIN_ONE } from '../../../shared/families/judge/metrics.js';
import type { JudgeSuite } from '../../../shared/families/judge/suite.js';
import { judgeFamily, ordinalRange } from '../../../shared/families/judge/task.js';
import { scorerFigures } from '../../../shared/lib/metrics/scores.js';
import { validateSuite } from '../../../shared/registry/suite.js';

const judgeSuite = (judge: Record<string, unknown>) =>
  validateSuite(
    {
      version: 1,
      name: 'j',
      task: 'judge',
      dataset: { path: 'x.csv', columns: { gold: 'human' } },
      judge: { prompt: 'prompts/p.md', ...judge },
      backends: ['sim:x'],
    },
    'test suite',
  ) as unknown as JudgeSuite;

const scoreMetrics = (judge: Record<string, unknown>) =>
  judgeFamily.scorers(judgeSuite(judge) as never).score!.metrics;

/** A [0, 1] judge's fractional answers against 0/1 human labels. */
const FRACTIONS = [0.2, 0.9, 0.6].map((value, i) => ({ value, target: [0, 1, 1][i] }));

describe('ordinal ranges', () => {
  it('by default: whole-number bounds with at least three points', () => {
    expect(ordinalRange(judgeSuite({ range: [1, 5] }).judge)).toBe(true);
    expect(ordinalRange(judgeSuite({ range: [0, 10] }).judge)).toBe(true);
    expect(ordinalRange(judgeSuite({ range: [-1, 1] }).judge)).toBe(true);
    expect(ordinalRange(judgeSuite({ range: [0, 1] }).judge)).toBe(false);
    expect(ordinalRange(judgeSuite({ range: [1, 2] }).judge)).toBe(false);
    expect(ordinalRange(judgeSuite({ range: [0, 1.5] }).judge)).toBe(false);
    expect(ordinalRange(judgeSuite({ labels: ['a', 'b'] }).judge)).toBe(false);
  });

  it('a [0, 1] range is not ordinal: no weighted kappa of fractional scores against 0/1 gold', () => {
    expect(scoreMetrics({ range: [0, 1], threshold: 0.5 })).toEqual({ threshold: 0.5 });
    const { summary } = scorerFigures('number', FRACTIONS, {
      ...scoreMetrics({ range: [0, 1], threshold: 0.5 }),
      bootstrap: false,
    });
    expect(summary.metrics).not.toHaveProperty('weightedKappa');
    // ROC-AUC by hand: the one negative (0.2) is below both positives (0.9, 0.6) → 2/2 = 1.
    expect(summary.metrics.rocAuc!.value).toBe(1);
  });

  it('`ordinal` declares it either way, and says so in the config', () => {
    expect(scoreMetrics({ range: [0, 1], ordinal: true })).toEqual({
      ordinal: true,
      extra: { withinOne: WITHIN_ONE },
    });
    expect(scoreMetrics({ range: [1, 5], ordinal: false, threshold: 4 })).toEqual({ threshold: 4 });
    expect(scoreMetrics({ range: [1, 5] })).toEqual({ ordinal: true, extra: { withinOne: WITHIN_ONE } });
    const config = (judge: Record<string, unknown>) => judgeFamily.config(judgeSuite(judge) as never).answer;
    expect(config({ range: [0, 1], ordinal: true })).toBe('range 0..1 (ordinal)');
    expect(config({ range: [1, 5], ordinal: false })).toBe('range 1..5 (not ordinal)');
    expect(config({ range: [1, 5] })).toBe('range 1..5');
  });

  it('a declared [0, 1] scale gets the quadratic weighted kappa, by hand', () => {
    const { summary } = scorerFigures('number', FRACTIONS, {
      ...scoreMetrics({ range: [0, 1], ordinal: true }),
      bootstrap: false,
    });
    // Observed Σ (x − y)² = 0.2² + 0.1² + 0.4² = 0.04 + 0.01 + 0.16 = 0.21.
    // Chance: Σ over every (judge, gold) pair of (x_i − y_j)², over n = 3:
    //   0.2: 0.04 + 0.64 + 0.64 = 1.32; 0.9: 0.81 + 0.01 + 0.01 = 0.83; 0.6: 0.36 + 0.16 + 0.16 = 0.68;
    //   (1.32 + 0.83 + 0.68) / 3 = 2.83 / 3. κw = 1 − 0.21 / (2.83 / 3) = 1 − 0.63 / 2.83.
    expect(summary.metrics.weightedKappa!.value).toBeCloseTo(1 - 0.63 / 2.83, 12);
  });

  it('the suite takes `ordinal` with `range` or `labels`, never with a pairwise judge', () => {
    expect(judgeSuite({ range: [0, 1], ordinal: true }).judge.ordinal).toBe(true);
    expect(() => judgeSuite({ pairwise: ['a', 'b'], ordinal: true })).toThrow(
      /`ordinal` needs `labels` or `range`/,
    );
  });
});
