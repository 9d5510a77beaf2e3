import { isUtf8 } from 'node:buffer';

/**
 * Finds the bytes of a stream that are not valid UTF-8, chunk by chunk, without holding the
 * stream. The hot path is one native `isUtf8` over each chunk (less the at most 3 bytes of a
 * character the chunk boundary splits); only a chunk that fails it is walked byte by byte,
 * with the WHATWG decoder's rules (overlong forms, surrogates and code points above U+10FFFF
 * are invalid), so the offsets are those at which a decoder would have put U+FFFD.
 */
export class Utf8Check {
  /** Continuation bytes the current character still needs (0: between characters). */
  private needed = 0;
  private lower = 0x80;
  private upper = 0xbf;
  /** Absolute offset of the current character's first byte. */
  private start = 0;

  /**
   * Checks `chunk`, whose first byte is at absolute offset `base` (chunks in stream order):
   * returns the offset of the first byte of each invalid sequence, in order (usually none).
   */
  push(chunk: Uint8Array, base: number): number[] {
    const bad: number[] = [];
    let i = 0;
    // Finish the character the previous chunk began.
    while (this.needed > 0 && i < chunk.length) if (this.step(chunk[i]!, base + i, bad)) i += 1;
    if (i >= chunk.length) return bad;
    const end = splitCharacterStart(chunk, i);
    if (isUtf8(chunk.subarray(i, end))) i = end;
    while (i < chunk.length) if (this.step(chunk[i]!, base + i, bad)) i += 1;
    return bad;
  }

  /** At the end of the stream: the offset of a character cut short by it, if any. */
  end(): number[] {
    if (this.needed === 0) return [];
    this.reset();
    return [this.start];
  }

  private reset(): void {
    this.needed = 0;
    this.lower = 0x80;
    this.upper = 0xbf;
  }

  /** One byte of the WHATWG UTF-8 decoder; false when the byte must be read again (it ended a bad sequence). */
  private step(byte: number, offset: number, bad: number[]): boolean {
    if (this.needed === 0) {
      this.start = offset;
      if (byte <= 0x7f) return true;
      if (byte >= 0xc2 && byte <= 0xdf) this.needed = 1;
      else if (byte >= 0xe0 && byte <= 0xef) {
        if (byte === 0xe0) this.lower = 0xa0;
        if (byte === 0xed) this.upper = 0x9f;
        this.needed = 2;
      } else if (byte >= 0xf0 && byte <= 0xf4) {
        if (byte === 0xf0) this.lower = 0x90;
        if (byte === 0xf4) this.upper = 0x8f;
        this.needed = 3;
      } else bad.push(offset);
      return true;
    }
    if (byte < this.lower || byte > this.upper) {
      this.reset();
      bad.push(this.start);
      return false;
    }
    this.lower = 0x80;
    this.upper = 0xbf;
    this.needed -= 1;
    return true;
  }
}

/**
 * Where the character that the end of `chunk` cuts short begins (`chunk.length` when none is):
 * a lead byte among the last three whose character needs more bytes than remain.
 */
function splitCharacterStart(chunk: Uint8Array, from: number): number {
  const n = chunk.length;
  for (let i = n - 1; i >= Math.max(from, n - 3); i -= 1) {
    const byte = chunk[i]!;
    if (byte < 0x80) return n;
    if (byte >= 0xc0) {
      const size = byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : 2;
      return n - i < size ? i : n;
    }
  }
  return n;
}

/** The message of a row with bytes that are not UTF-8. */
export function notUtf8(offset: number): string {
  return `not valid UTF-8 at byte ${offset} of the file (set dataset.encoding if it is in another encoding, e.g. "windows-1252" or "utf-16le")`;
}
