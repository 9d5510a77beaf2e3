/**
 * The mergeable rows behind report.json `panel` and `bias.selfPreference`: their figures are
 * the metric's own over the same items, and a run tallied in parts (saved, loaded, merged in
 * order) gives the figures one pass gives, whatever the split, with judges, labels and producers
 * first seen in a later part.
 */
import { deserialize, serialize } from 'node:v8';
import { describe, expect, it } from 'vitest';
import { type PanelItem, panelAgreement } from '../../../shared/lib/metrics/panel.js';
import { PanelRows } from '../../../shared/lib/metrics/panel-rows.js';
import { selfPreference } from '../../../shared/lib/metrics/self-preference.js';
import { SelfPreferenceRows } from '../../../shared/lib/metrics/self-preference-rows.js';
import { mulberry32 } from '../../../shared/lib/metrics/stats.js';

const LABELS = ['TP', 'FP1', 'FP2', 'TN'];

/** 60 items of three judges; judge `c` only from item 20 on, and the label TN only from item 30 on. */
function panelItems(): PanelItem[] {
  const rng = mulberry32(7);
  return Array.from({ length: 60 }, (_, i) => {
    const pool = i < 30 ? LABELS.slice(0, 3) : LABELS;
    const gold = pool[Math.floor(rng() * pool.length)]!;
    const vote = () => (rng() < 0.7 ? gold : pool[Math.floor(rng() * pool.length)]!);
    const labels: PanelItem['labels'] = { a: vote(), b: rng() < 0.1 ? undefined : vote() };
    return { gold, labels: i < 20 ? labels : { ...labels, c: vote() } };
  });
}

const roundTrip = <T>(state: T): T => deserialize(serialize(state)) as T;

describe('PanelRows', () => {
  const items = panelItems();
  const whole = new PanelRows('ensemble backends');
  for (const item of items) whole.add(String(item.gold), item.labels);

  it("gives panelAgreement's figures over the same items, with its source", () => {
    expect(whole.figures()).toEqual({
      source: 'ensemble backends',
      ...panelAgreement(items, { judges: ['a', 'b', 'c'] }),
    });
    // Judge c labelled the last 40 items only.
    expect(whole.figures()!.accuracy.c!.n).toBe(40);
  });

  it.each([1, 10, 20, 31, 59])('merges parts split at item %i into the figures of one pass', (at) => {
    const first = new PanelRows('ensemble backends');
    const second = new PanelRows('ensemble backends');
    for (const item of items.slice(0, at)) first.add(String(item.gold), item.labels);
    for (const item of items.slice(at)) second.add(String(item.gold), item.labels);
    const merged = PanelRows.fromState(roundTrip(first.toState()));
    merged.merge(PanelRows.fromState(roundTrip(second.toState())));
    expect(merged.panelItems()).toEqual(whole.panelItems());
    expect(merged.figures()).toEqual(whole.figures());
  });

  it('a judge missing from a later part has no label on its items', () => {
    const first = new PanelRows('s');
    first.add('x', { a: 'x', b: 'y' });
    const second = new PanelRows('s');
    second.add('y', { a: 'y' });
    first.merge(second);
    expect(first.panelItems().map((item) => ({ ...item.labels }))).toEqual([{ a: 'x', b: 'y' }, { a: 'y' }]);
  });

  it('has no figures below two judges or without items', () => {
    expect(new PanelRows('s').figures()).toBeNull();
    const one = new PanelRows('s');
    one.add('x', { a: 'x' });
    expect(one.figures()).toBeNull();
  });
});

describe('SelfPreferenceRows', () => {
  const rng = mulberry32(11);
  const producers = ['openai:gpt-4o', 'anthropic:claude-3-5-sonnet', 'gemini-2.5-pro', undefined];
  const rows = Array.from({ length: 50 }, (_, i) => ({
    producer: producers[i % 4],
    judge: i === 6 ? undefined : i < 25 ? 'sim:gpt-4o-mini' : 'anthropic:claude-haiku-4-5',
    verdict: i % 9 === 0 ? undefined : 1 + Math.floor(rng() * 5),
    gold: i % 13 === 0 ? undefined : 1 + Math.floor(rng() * 5),
  }));
  const whole = new SelfPreferenceRows('producer');
  for (const r of rows) whole.add(r.producer, r.judge, r.verdict, r.gold);

  it("gives selfPreference's figures over the items with a producer and a judge, and counts the rest", () => {
    const kept = rows.filter((r) => r.producer !== undefined && r.judge !== undefined);
    const figures = whole.figures();
    expect(figures).toEqual({
      column: 'producer',
      noProducer: rows.filter((r) => r.producer === undefined).length,
      noJudge: 1,
      ...selfPreference(kept.map((r) => ({ ...r, producer: r.producer!, judge: r.judge! }))),
    });
    expect(figures.noProducer).toBe(12);
    // Two judge families: each has its own group.
    expect(Object.keys(figures.byJudge)).toEqual(['anthropic', 'openai']);
  });

  it.each([3, 26, 49])('merges parts split at item %i into the figures of one pass', (at) => {
    const first = new SelfPreferenceRows('producer');
    const second = new SelfPreferenceRows('producer');
    for (const r of rows.slice(0, at)) first.add(r.producer, r.judge, r.verdict, r.gold);
    for (const r of rows.slice(at)) second.add(r.producer, r.judge, r.verdict, r.gold);
    const merged = SelfPreferenceRows.fromState(roundTrip(first.toState()));
    merged.merge(SelfPreferenceRows.fromState(roundTrip(second.toState())));
    expect(merged.figures()).toEqual(whole.figures());
  });

  it('reads labels by the positive labels it is given, and refuses a label it cannot place', () => {
    const labels = new SelfPreferenceRows('p', { positive: ['good'] });
    labels.add('gpt-4o', 'gpt-4o-mini', 'good', 'bad');
    labels.add('claude-3-haiku', 'gpt-4o-mini', 'bad', 'bad');
    expect(labels.figures().selfPreference).toMatchObject({
      value: 1,
      own: { n: 1, error: 1 },
      other: { n: 1, error: 0 },
    });
    expect(() => new SelfPreferenceRows('p').add('gpt-4o', 'gpt-4o', 'good', 'bad')).toThrow(
      /positive labels or a label order/,
    );
  });
});
