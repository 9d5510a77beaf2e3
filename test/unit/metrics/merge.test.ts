/**
 * Each accumulator of the report's tally, saved (`toState`), loaded (`fromState`) and appended
 * to (`merge`): the tally of a run's first part merged with its second's is the tally of the
 * whole run, in the same compact columns, wherever the run is cut.
 */
import { describe, expect, it } from 'vitest';
import {
  CodedLabelPairs,
  CompensatedSum,
  CostTally,
  classificationMetrics,
  LabelPairCounts,
  LabelRows,
  LengthRows,
  mulberry32,
  NumberColumn,
  RepeatRows,
  type RepeatValue,
  type ScoreRow,
  scorerFigures,
  ValueRows,
} from '../../../shared/lib/metrics/index.js';

/** Every cut of `n` items into a first and a second part, both possibly empty. */
const cuts = (n: number) => Array.from({ length: n + 1 }, (_, i) => i);

/**
 * The tally of `items[0, cut)` merged with the tally of `items[cut, n)`, each saved and loaded
 * back first, beside the tally of every item.
 */
function tallied<T, I>(
  items: readonly I[],
  cut: number,
  make: () => T,
  add: (tally: T, item: I) => void,
  roundTrip: (tally: T) => T,
  merge: (tally: T, later: T) => void,
): { merged: T; whole: T } {
  const of = (slice: readonly I[]) => {
    const tally = make();
    for (const item of slice) add(tally, item);
    return tally;
  };
  const merged = roundTrip(of(items.slice(0, cut)));
  merge(merged, roundTrip(of(items.slice(cut))));
  return { merged, whole: of(items) };
}

describe('NumberColumn', () => {
  const column = (values: number[]) => {
    const c = new NumberColumn();
    for (const v of values) c.push(v);
    return c;
  };

  it('appends in the width one column of every value has', () => {
    const cases: [number[], number[], string][] = [
      [[0, 1, 1], [1, 0], 'Uint8Array'],
      [[0, 1], [300, 2], 'Int32Array'],
      [[-1, 7], [1], 'Int32Array'],
      [[1, 2], [0.5], 'Float64Array'],
      [[1.5], [1, 2], 'Float64Array'],
      [[], [255], 'Uint8Array'],
      [[3], [], 'Uint8Array'],
      [[0], [-0], 'Float64Array'],
    ];
    for (const [first, second, width] of cases) {
      const merged = column(first);
      merged.merge(NumberColumn.fromState(column(second).toState()));
      const whole = column([...first, ...second]);
      expect(merged.values()).toStrictEqual(whole.values());
      expect(merged.values().constructor.name).toBe(width);
    }
  });

  it('keeps a column of 0/1 values a byte an item, grows past its first capacity, and takes pushes after loading', () => {
    const random = mulberry32(3);
    const bits = Array.from({ length: 2500 }, () => (random() < 0.5 ? 1 : 0));
    const merged = column(bits.slice(0, 1500));
    merged.merge(column(bits.slice(1500)));
    expect(merged.toState()).toBeInstanceOf(Uint8Array);
    expect(merged.toState()).toHaveLength(2500);
    expect(Array.from(merged.values())).toEqual(bits);
    const loaded = NumberColumn.fromState(new Uint8Array(0));
    loaded.push(4);
    loaded.push(1e9);
    expect(Array.from(loaded.values())).toEqual([4, 1e9]);
  });
});

describe('CompensatedSum', () => {
  it('merged, equals one sum to within its last bits; saved, to the bit', () => {
    const random = mulberry32(5);
    const values = Array.from({ length: 1000 }, () => random() * 1e-4);
    for (const cut of [0, 1, 333, 999, 1000]) {
      const { merged, whole } = tallied(
        values,
        cut,
        () => new CompensatedSum(),
        (s, v) => s.add(v),
        (s) => CompensatedSum.fromState(s.toState()),
        (s, later) => s.merge(later),
      );
      expect(Math.abs(merged.value() - whole.value())).toBeLessThanOrEqual(1e-12 * whole.value());
    }
  });
});

describe('CodedLabelPairs', () => {
  // The two parts meet their labels in different orders: the second codes B before A.
  const pairs: [string, string][] = [
    ['A', 'A'],
    ['A', 'C'],
    ['C', 'C'],
    ['B', 'B'],
    ['B', 'A'],
    ['D', 'Error'],
    ['A', 'A'],
    ['C', 'B'],
  ];

  it("maps the later part's codes into the first part's table: the table and codes of one pass", () => {
    for (const cut of cuts(pairs.length)) {
      const { merged, whole } = tallied(
        pairs,
        cut,
        () => new CodedLabelPairs(),
        (c, [gold, pred]) => c.add(gold, pred),
        (c) => CodedLabelPairs.fromState(c.toState()),
        (c, later) => c.merge(later),
      );
      expect(merged.toState()).toStrictEqual(whole.toState());
    }
    const second = CodedLabelPairs.of(pairs.slice(3).map(([gold, pred]) => ({ gold, pred })));
    expect(second.labels).toEqual(['B', 'A', 'D', 'Error', 'C']);
  });

  it('gives the same metrics, bootstrap intervals included', () => {
    const random = mulberry32(9);
    const labels = ['TP', 'FP1', 'FP2', 'FP3'];
    const many = Array.from({ length: 400 }, (): [string, string] => [
      labels[Math.floor(random() * 4)]!,
      random() < 0.05 ? 'Error' : labels[Math.floor(random() * 4)]!,
    ]);
    const { merged, whole } = tallied(
      many,
      137,
      () => new CodedLabelPairs(),
      (c, [gold, pred]) => c.add(gold, pred),
      (c) => CodedLabelPairs.fromState(c.toState()),
      (c, later) => c.merge(later),
    );
    expect(classificationMetrics(merged)).toStrictEqual(classificationMetrics(whole));
  });
});

describe('LabelPairCounts', () => {
  it('adds the counts, rows and columns in order of first appearance', () => {
    const pairs: [string, string][] = [
      ['TP', 'FP1'],
      ['FP1', 'FP1'],
      ['FP2', 'TP'],
      ['TP', 'TP'],
      ['FP1', 'Error'],
      ['TP', 'FP1'],
    ];
    for (const cut of cuts(pairs.length)) {
      const { merged, whole } = tallied(
        pairs,
        cut,
        () => new LabelPairCounts(),
        (c, [gold, pred]) => c.add(gold, pred),
        (c) => LabelPairCounts.fromState(c.toState()),
        (c, later) => c.merge(later),
      );
      expect(merged.toState()).toEqual(whole.toState());
    }
  });
});

describe('LabelRows', () => {
  it('counts, distribution (in order of first appearance) and pairs against gold of one pass', () => {
    const rows: ScoreRow[] = [
      { value: 'rude', target: 'polite' },
      { unscored: 'parse', target: 'neutral' },
      { value: 'polite' },
      { unscored: 'invalid_row', target: 'rude' },
      { value: 'neutral', target: 'neutral' },
      { value: 'polite', target: 'polite' },
    ];
    for (const cut of cuts(rows.length)) {
      const { merged, whole } = tallied(
        rows,
        cut,
        () => new LabelRows(),
        (r, row) => r.add(row),
        (r) => LabelRows.fromState(r.toState()),
        (r, later) => r.merge(later),
      );
      expect(merged.toState()).toStrictEqual(whole.toState());
      expect(Object.keys(merged.distribution)).toEqual(['rude', 'polite', 'neutral']);
    }
  });
});

describe('ValueRows', () => {
  const check = (kind: 'number' | 'pass', rows: ScoreRow[]) => {
    for (const cut of cuts(rows.length)) {
      const { merged, whole } = tallied(
        rows,
        cut,
        () => new ValueRows(kind),
        (r, row) => r.add(row),
        (r) => ValueRows.fromState(r.toState()),
        (r, later) => r.merge(later),
      );
      expect({ cut, state: merged.toState() }).toStrictEqual({ cut, state: whole.toState() });
      expect(scorerFigures(kind, merged, { threshold: 3 })).toStrictEqual(
        scorerFigures(kind, whole, { threshold: 3 }),
      );
    }
  };

  it('targets that start in the second part, stop in it, or come and go', () => {
    check('number', [
      { value: 4 },
      { unscored: 'parse' },
      { value: 2 },
      { value: 5, target: 1 },
      { value: 1, target: 0 },
      { value: 3 },
      { value: 2.5, target: 1 },
      { value: 1 },
      { value: 4, target: 0 },
    ]);
    check('number', [{ value: 1 }, { value: 2 }, { value: 3, target: 4 }]);
    check('number', [{ value: 3, target: 4 }, { value: 1 }, { value: 2 }]);
    check('pass', [
      { value: true },
      { value: false, target: false },
      { unscored: 'refusal', target: true },
      { value: true, target: true },
      { value: false },
    ]);
  });

  it('keeps passes a byte an item in its saved state', () => {
    const rows = new ValueRows('pass');
    for (let i = 0; i < 100; i += 1) rows.add({ value: i % 3 === 0, target: i % 2 === 0 });
    const state = rows.toState();
    expect(state.values).toBeInstanceOf(Uint8Array);
    expect(state.paired!.targets).toBeInstanceOf(Uint8Array);
    expect(state.paired!.has).toBeInstanceOf(Uint8Array);
  });
});

describe('LengthRows', () => {
  it("codes the later part's gold classes into the first part's: the figures of one pass", () => {
    const items: [number, number, string | undefined][] = [
      [120, 0.9, 'yes'],
      [40, 0.2, 'no'],
      [300, 1, undefined],
      [80, 0.4, 'no'],
      [95, 0.6, 'maybe'],
      [150, 0.7, 'yes'],
      [60, 0.1, 'no'],
      [210, 0.8, 'yes'],
    ];
    for (const cut of cuts(items.length)) {
      const { merged, whole } = tallied(
        items,
        cut,
        () => new LengthRows(),
        (r, [length, score, gold]) => r.add(length, score, gold),
        (r) => LengthRows.fromState(r.toState()),
        (r, later) => r.merge(later),
      );
      expect(merged.toState()).toStrictEqual(whole.toState());
      expect(merged.figures()).toStrictEqual(whole.figures());
    }
  });
});

describe('RepeatRows', () => {
  it('units, ties and each repeat’s rows of one pass, for labels and numbers', () => {
    const labels: [ScoreRow, RepeatValue[] | undefined, boolean][] = [
      [{ value: 'a', target: 'a' }, ['a', 'a', 'b'], false],
      [{ value: 'b', target: 'a' }, ['b', null, 'a'], true],
      [{ unscored: 'parse', target: 'b' }, undefined, false],
      [{ value: 'b', target: 'b' }, ['b', 'b', 'b'], false],
    ];
    const numbers: [ScoreRow, RepeatValue[] | undefined, boolean][] = [
      [{ value: 3, target: 4 }, [3, 2, 4], false],
      [{ value: 5 }, [5, 5, null], false],
      [{ unscored: 'provider' }, undefined, false],
      [{ value: 1.5, target: 2 }, [1, 2, 1.5], false],
    ];
    for (const [kind, items] of [
      ['label', labels],
      ['number', numbers],
    ] as const) {
      for (const cut of cuts(items.length)) {
        const { merged, whole } = tallied(
          items,
          cut,
          () => new RepeatRows(kind, 3),
          (r, [row, values, tie]) => r.add(row, values, tie),
          (r) => RepeatRows.fromState(r.toState()),
          (r, later) => r.merge(later),
        );
        expect(merged.toState()).toStrictEqual(whole.toState());
        expect(merged.figures()).toStrictEqual(whole.figures());
      }
    }
  });
});

describe('CostTally', () => {
  it('calls and tokens exactly, stages in order of first appearance, dollars to within their last bits', () => {
    const usage = (n: number) => ({ input: n, output: 2 * n, cached: n % 3 });
    const spends = [
      { stage: 'judge', costUsd: 0.0012, usage: usage(10), calls: 1 },
      { stage: 'judge.repair', costUsd: 0.0003, usage: usage(4), calls: 2 },
      { costUsd: 0.1, usage: usage(1) },
      { stage: 'audit', costUsd: 0.00071, usage: usage(7), calls: 1 },
      { stage: 'judge', costUsd: 0.0011, usage: usage(9), calls: 1 },
    ];
    for (const cut of cuts(spends.length)) {
      const { merged, whole } = tallied(
        spends,
        cut,
        () => new CostTally(),
        (t, spend) => t.add(spend),
        (t) => CostTally.fromState(t.toState()),
        (t, later) => t.merge(later),
      );
      const [a, b] = [merged.summary(5), whole.summary(5)];
      expect(Object.keys(a.byStage)).toEqual(Object.keys(b.byStage));
      expect(a.tokens).toEqual(b.tokens);
      expect(a.totalUsd).toBeCloseTo(b.totalUsd, 15);
      for (const [stage, s] of Object.entries(b.byStage)) {
        expect(a.byStage[stage]).toMatchObject({ calls: s.calls, tokens: s.tokens });
        expect(a.byStage[stage]!.usd).toBeCloseTo(s.usd, 15);
      }
    }
  });
});
