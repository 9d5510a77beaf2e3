import { describe, expect, it } from 'vitest';
import { IdIndex, IdSet } from '../../../shared/lib/id-index.js';
import { mulberry32 } from '../../../shared/lib/metrics/index.js';

describe('IdIndex', () => {
  it('gets, sets and overwrites like a Map, with non-ASCII and empty ids', () => {
    const index = new IdIndex();
    expect(index.get('a')).toBeUndefined();
    index.set('a', 1);
    index.set('', 2);
    index.set('привіт', 3);
    index.set('😀x', 4);
    index.set('a', 5);
    expect(index.size).toBe(4);
    expect(index.get('a')).toBe(5);
    expect(index.get('')).toBe(2);
    expect(index.get('привіт')).toBe(3);
    expect(index.get('😀x')).toBe(4);
    expect(index.has('😀')).toBe(false);
    expect([...index.entries()]).toEqual([
      ['a', 5],
      ['', 2],
      ['привіт', 3],
      ['😀x', 4],
    ]);
  });

  it('agrees with a Map over 100,000 random ids (32-bit hashes collide at this size)', () => {
    const rng = mulberry32(3);
    const index = new IdIndex();
    const map = new Map<string, number>();
    for (let i = 0; i < 100_000; i += 1) {
      const id = Math.floor(rng() * 150_000).toString(36) + (i % 7 === 0 ? 'é' : '');
      const value = i * 4 + (i % 3);
      index.set(id, value);
      map.set(id, value);
    }
    expect(index.size).toBe(map.size);
    for (const [id, value] of map) expect(index.get(id)).toBe(value);
    for (let i = 0; i < 1000; i += 1) expect(index.has(`missing-${i}`)).toBe(false);
    expect(new Map(index.entries())).toEqual(map);
  });
});

describe('IdIndex values', () => {
  it('refuses a value it cannot hold, saying which', () => {
    const index = new IdIndex();
    expect(() => index.set('a', -1)).toThrow(/not -1/);
    expect(() => index.set('a', 1.5)).toThrow(/not 1.5/);
    expect(() => index.set('a', 2 ** 32)).toThrow(RangeError);
    expect(index.size).toBe(0);
  });
});

describe('IdSet', () => {
  it('holds each id once and answers like a Set, in the order ids were first added', () => {
    const random = mulberry32(3);
    const ids = Array.from({ length: 5000 }, () => `item-${Math.floor(random() * 3000)}`);
    const set = IdSet.of(ids);
    const expected = new Set(ids);
    expect(set.size).toBe(expected.size);
    expect([...set]).toEqual([...expected]);
    for (let i = 0; i < 3000; i += 1) expect(set.has(`item-${i}`)).toBe(expected.has(`item-${i}`));
    expect(set.add('é').add('é').size).toBe(expected.size + 1);
    expect(set.has('é')).toBe(true);
  });
});
