/**
 * Objects keyed by data: labels, gold values, slice values, annotators. A plain `{}` keyed by
 * such a key loses or breaks some of them: `obj['__proto__'] = x` replaces the object's
 * prototype instead of adding a key (the entry vanishes from JSON and from Object.entries), and
 * `obj['constructor'] ?? 0` reads Object's constructor, not a missing count. An object without a
 * prototype has neither trap: every key is an ordinary own key, and `JSON.stringify` writes it.
 */

/** An empty object keyed by data (no prototype), optionally filled from `entries` in order. */
export function dict<T>(entries?: Iterable<readonly [string, T]>): Record<string, T> {
  const out = Object.create(null) as Record<string, T>;
  if (entries) for (const [key, value] of entries) out[key] = value;
  return out;
}

/** `obj[key]` when `obj` has it as its own key; never a value inherited from Object.prototype. */
export function own<T>(obj: Readonly<Record<string, T>> | undefined, key: string): T | undefined {
  return obj !== undefined && Object.hasOwn(obj, key) ? obj[key] : undefined;
}
