/**
 * A map from item ids to whole numbers (0 to 2^32 − 1) for a run's million items: each id held
 * as UTF-8 bytes in one growing buffer, the hash table and the values as typed arrays. About 16
 * bytes plus the id's length per id (and as much again while an array doubles), where a
 * `Map<string, number>` holds a string object and a table entry (70–100 bytes) per id. Exact:
 * ids are compared by their bytes. No deletion.
 */
export class IdIndex {
  private bytes = new Uint8Array(1 << 16);
  private used = 0;
  /** Entry i's id is `bytes[starts[i], starts[i + 1])` (the last one's ends at `used`). */
  private starts = new Uint32Array(1024);
  private vals = new Uint32Array(1024);
  /** Open addressing (linear probing): entry index + 1 per slot, 0 for an empty slot. */
  private table = new Uint32Array(2048);
  private scratch = new Uint8Array(256);
  private readonly encoder = new TextEncoder();
  private readonly decoder = new TextDecoder();
  size = 0;

  get(id: string): number | undefined {
    const entry = this.find(this.encode(id), this.hashOfScratch);
    return entry < 0 ? undefined : this.vals[entry];
  }

  has(id: string): boolean {
    return this.find(this.encode(id), this.hashOfScratch) >= 0;
  }

  set(id: string, value: number): void {
    if (!(Number.isInteger(value) && value >= 0 && value <= 0xffffffff))
      throw new RangeError(`IdIndex holds whole numbers from 0 to 2^32 - 1, not ${value}`);
    const length = this.encode(id);
    const hash = this.hashOfScratch;
    const found = this.find(length, hash);
    if (found >= 0) {
      this.vals[found] = value;
      return;
    }
    if ((this.size + 1) * 2 > this.table.length) this.rehash(this.table.length * 2);
    if (this.size === this.starts.length) this.growEntries();
    while (this.used + length > this.bytes.length) {
      const grown = new Uint8Array(this.bytes.length * 2);
      grown.set(this.bytes.subarray(0, this.used));
      this.bytes = grown;
    }
    const entry = this.size++;
    this.bytes.set(this.scratch.subarray(0, length), this.used);
    this.starts[entry] = this.used;
    this.used += length;
    this.vals[entry] = value;
    this.place(entry, hash);
  }

  /** Every id and its value, in the order the ids were first set. */
  *entries(): IterableIterator<[string, number]> {
    for (let i = 0; i < this.size; i += 1) {
      const end = i + 1 < this.size ? this.starts[i + 1]! : this.used;
      yield [this.decoder.decode(this.bytes.subarray(this.starts[i]!, end)), this.vals[i]!];
    }
  }

  private hashOfScratch = 0;

  /** Writes `id` as UTF-8 into the scratch buffer, sets its hash, returns its byte length. */
  private encode(id: string): number {
    // UTF-8 takes at most 3 bytes per UTF-16 code unit.
    if (id.length * 3 > this.scratch.length) this.scratch = new Uint8Array(id.length * 3);
    const length = this.encoder.encodeInto(id, this.scratch).written;
    this.hashOfScratch = fnv1a(this.scratch, 0, length);
    return length;
  }

  /** The entry holding the scratch buffer's id, or −1. */
  private find(length: number, hash: number): number {
    const mask = this.table.length - 1;
    for (let slot = hash & mask; ; slot = (slot + 1) & mask) {
      const held = this.table[slot]!;
      if (held === 0) return -1;
      const entry = held - 1;
      const start = this.starts[entry]!;
      const end = entry + 1 < this.size ? this.starts[entry + 1]! : this.used;
      if (end - start !== length) continue;
      let same = true;
      for (let i = 0; i < length; i += 1) {
        if (this.bytes[start + i] !== this.scratch[i]) {
          same = false;
          break;
        }
      }
      if (same) return entry;
    }
  }

  private place(entry: number, hash: number): void {
    const mask = this.table.length - 1;
    let slot = hash & mask;
    while (this.table[slot] !== 0) slot = (slot + 1) & mask;
    this.table[slot] = entry + 1;
  }

  private rehash(slots: number): void {
    this.table = new Uint32Array(slots);
    for (let entry = 0; entry < this.size; entry += 1) {
      const end = entry + 1 < this.size ? this.starts[entry + 1]! : this.used;
      this.place(entry, fnv1a(this.bytes, this.starts[entry]!, end));
    }
  }

  private growEntries(): void {
    const capacity = this.starts.length * 2;
    const starts = new Uint32Array(capacity);
    starts.set(this.starts);
    this.starts = starts;
    const vals = new Uint32Array(capacity);
    vals.set(this.vals);
    this.vals = vals;
  }
}

/**
 * A set of item ids held as an {@link IdIndex} (about 16 bytes plus the id's length per id,
 * where a `Set<string>` holds a string object and a table entry per id).
 */
export class IdSet implements Iterable<string> {
  private readonly index = new IdIndex();

  static of(ids: Iterable<string>): IdSet {
    const set = new IdSet();
    for (const id of ids) set.add(id);
    return set;
  }

  add(id: string): this {
    if (!this.index.has(id)) this.index.set(id, 0);
    return this;
  }

  has(id: string): boolean {
    return this.index.has(id);
  }

  get size(): number {
    return this.index.size;
  }

  /** The ids in the order they were first added. */
  *[Symbol.iterator](): IterableIterator<string> {
    for (const [id] of this.index.entries()) yield id;
  }
}

/** FNV-1a (32 bits) of `bytes[start, end)`. */
function fnv1a(bytes: Uint8Array, start: number, end: number): number {
  let hash = 0x811c9dc5;
  for (let i = start; i < end; i += 1) hash = Math.imul(hash ^ bytes[i]!, 0x01000193);
  return hash >>> 0;
}
