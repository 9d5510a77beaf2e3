/**
 * A map whose keys can be read in order, for a store that takes many writes between reads in
 * order (a DynamoDB partition queried now and then, a bucket listed now and then): new keys
 * are gathered unsorted and merged into the ordered list on the next ordered read, so a write
 * costs a map insertion and a read sorts only what came since the last one.
 */
export class SortedKeys<V> {
  readonly entries = new Map<string, V>();
  private sorted: string[] = [];
  private added: string[] = [];
  private stale = 0;

  constructor(private readonly compare: (a: string, b: string) => number) {}

  get size(): number {
    return this.entries.size;
  }

  get(key: string): V | undefined {
    return this.entries.get(key);
  }

  /** Sets `key`, answering the value it replaces. */
  set(key: string, value: V): V | undefined {
    const before = this.entries.get(key);
    this.entries.set(key, value);
    if (before === undefined) this.added.push(key);
    return before;
  }

  /** Removes `key`, answering the value it had. */
  delete(key: string): V | undefined {
    const before = this.entries.get(key);
    if (before !== undefined) {
      this.entries.delete(key);
      this.stale += 1;
    }
    return before;
  }

  /** A copy holding the same values (a snapshot of a store whose values are never changed in place). */
  clone(): SortedKeys<V> {
    const copy = new SortedKeys<V>(this.compare);
    for (const [key, value] of this.entries) copy.entries.set(key, value);
    copy.sorted = [...this.ordered()];
    return copy;
  }

  /** Every key, in order. */
  ordered(): readonly string[] {
    if (this.added.length === 0 && this.stale === 0) return this.sorted;
    const fresh = this.added.sort(this.compare);
    const merged: string[] = [];
    const push = (key: string) => {
      // A key deleted and set again since the last read is in both lists: keep it once.
      if (this.entries.has(key) && merged[merged.length - 1] !== key) merged.push(key);
    };
    let i = 0;
    let j = 0;
    while (i < this.sorted.length || j < fresh.length) {
      if (j >= fresh.length || (i < this.sorted.length && this.compare(this.sorted[i]!, fresh[j]!) <= 0))
        push(this.sorted[i++]!);
      else push(fresh[j++]!);
    }
    this.sorted = merged;
    this.added = [];
    this.stale = 0;
    return merged;
  }

  /** The index of the first key not before `value` in {@link ordered}. */
  lowerBound(value: string): number {
    return bound(this.ordered(), value, this.compare, false);
  }

  /** The index of the first key after `value` in {@link ordered}. */
  upperBound(value: string): number {
    return bound(this.ordered(), value, this.compare, true);
  }
}

function bound(
  keys: readonly string[],
  value: string,
  compare: (a: string, b: string) => number,
  after: boolean,
): number {
  let lo = 0;
  let hi = keys.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    const order = compare(keys[mid]!, value);
    if (order < 0 || (after && order === 0)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
