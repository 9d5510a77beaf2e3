/**
 * Labels that are also the names of properties every JavaScript object has: each keeps its own
 * entry in the per-class, confusion and distribution tables, in memory, in JSON and after a
 * scorer's rows are saved and merged (the cloud's parts).
 */
import { describe, expect, it } from 'vitest';
import {
  classificationMetrics,
  LabelRows,
  type ScoreRow,
  scorerFigures,
} from '../../../shared/lib/metrics/index.js';
import { dict, own } from '../../../shared/model/dict.js';

const LABELS = ['__proto__', 'constructor', 'toString', 'yes'];

/** 40 rows, 10 of each gold label: every third predicted as the next label, the rest right. */
const rows: ScoreRow[] = Array.from({ length: 40 }, (_, i) => {
  const gold = LABELS[i % 4]!;
  return { target: gold, value: i % 3 === 0 ? LABELS[(i + 1) % 4]! : gold };
});

const sum = (values: Iterable<number>) => [...values].reduce((a, b) => a + b, 0);

describe('labels named like object properties', () => {
  it('each has its own per-class and confusion entry, and they sum to every row', () => {
    const m = classificationMetrics(
      rows.map((r) => ({ gold: r.target as string, pred: r.value as string })),
      { positive: false, bootstrap: false },
    );
    // Parsed back from its JSON, as report.json is read.
    const parsed = JSON.parse(JSON.stringify(m));
    for (const table of [m, parsed]) {
      expect(Object.keys(table.perClass).sort()).toEqual([...LABELS].sort());
      expect(
        sum(Object.values(table.perClass as Record<string, { support: number }>).map((c) => c.support)),
      ).toBe(40);
      expect(Object.keys(table.confusion).sort()).toEqual([...LABELS].sort());
      const cells = Object.values(table.confusion as Record<string, Record<string, number>>).flatMap((row) =>
        Object.values(row),
      );
      expect(sum(cells)).toBe(40);
      const row = own<Record<string, number>>(table.confusion, LABELS[0]!)!;
      expect(own(row, LABELS[0]!)).toBe(6);
      expect(own(row, 'constructor')).toBe(4);
    }
  });

  it('the distribution counts them, across saved and merged rows', () => {
    const whole = new LabelRows();
    const first = new LabelRows();
    const later = new LabelRows();
    rows.forEach((row, i) => {
      whole.add(row);
      (i < 17 ? first : later).add(row);
    });
    // Saved as the parts are (JSON), loaded, then merged.
    const loaded = LabelRows.fromState(JSON.parse(JSON.stringify(first.toState())));
    loaded.merge(LabelRows.fromState(JSON.parse(JSON.stringify(later.toState()))));
    for (const r of [whole, loaded]) {
      expect(Object.keys(r.distribution).sort()).toEqual([...LABELS].sort());
      expect(sum(Object.values(r.distribution))).toBe(40);
      for (const count of Object.values(r.distribution)) expect(typeof count).toBe('number');
    }
    const { summary } = scorerFigures('label', rows, { bootstrap: false });
    const tables = JSON.parse(JSON.stringify(summary.tables));
    expect(sum(Object.values(tables.distribution as Record<string, number>))).toBe(40);
    expect(
      sum(Object.values(tables.perClass as Record<string, { support: number }>).map((c) => c.support)),
    ).toBe(40);
  });

  it('dict keeps __proto__ as an ordinary key; own never reads an inherited one', () => {
    const d = dict<number>([['__proto__', 1]]);
    d[LABELS[1]!] = 2;
    expect(JSON.stringify(d)).toBe('{"__proto__":1,"constructor":2}');
    expect(Object.keys({ ...d })).toEqual(['__proto__', 'constructor']);
    expect(own(d, 'toString')).toBeUndefined();
    expect(own({} as Record<string, number>, 'constructor')).toBeUndefined();
    expect(own(JSON.parse('{"__proto__":3}'), '__proto__')).toBe(3);
  });
});
