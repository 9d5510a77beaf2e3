/**
 * How long texts are kept in a stored result: cut to an opening, then
 * `… [cut: <n> characters in all, sha256:<digest>]`, their whole length and a digest of them
 * (see `storedFieldLength`), with the budgets each part of a result may hold. result-size.ts
 * applies them to a whole result; a failed result's input (model.ts) is cut by the same rule.
 */
import { createHash } from 'node:crypto';

/** An input field longer than this is stored cut (as it always was), whatever the other fields. */
export const STORED_FIELD_CHARS = 16_000;
/** How much of a long field a cut keeps (a result stored cut long ago has kept this much). */
export const CUT_OPENING_CHARS = 2_000;
/** What the stored input fields and columns of one result may hold together, characters. */
export const STORED_INPUT_CHARS = 128_000;
/** What a result's output may hold, as JSON characters. */
export const STORED_OUTPUT_CHARS = 64_000;
/** What a result's details may hold, as JSON characters. */
export const STORED_DETAILS_CHARS = 32_000;
/** What one score's explanation may hold, and its details as JSON, characters each. */
export const STORED_EXPLANATION_CHARS = 8_000;
/** What the raw model text kept of a failed parse may hold, characters. */
export const STORED_RAW_CHARS = 16_000;
/** What a failure's message may hold, characters (a vendor's error body can be long). */
export const STORED_MESSAGE_CHARS = 4_000;
/** Openings a field is cut to when the fields still do not fit: shorter each pass. */
const OPENINGS = [CUT_OPENING_CHARS, 200, 0] as const;

/**
 * `value` cut to its first `opening` characters (never half a surrogate pair), then its whole
 * length and the first 16 hex digits of its sha256.
 */
export function cutText(value: string, opening: number): string {
  const digest = createHash('sha256').update(value).digest('hex').slice(0, 16);
  let end = Math.min(opening, value.length);
  const last = value.charCodeAt(end - 1);
  if (end > 0 && last >= 0xd800 && last <= 0xdbff) end -= 1;
  return `${value.slice(0, end)}… [cut: ${value.length} characters in all, sha256:${digest}]`;
}

/**
 * `value` as kept when it may hold `limit` characters: whole, or cut to as much of its opening
 * as leaves room for its length and digest within `limit` (so a text kept is kept as itself).
 */
export function capText(value: string, limit: number): string {
  if (value.length <= limit || isCut(value)) return value;
  const room = limit - (cutText(value, 0).length + 1);
  return cutText(value, Math.max(0, room));
}

/** A text cut already (by {@link cutText}): it is never cut again, which would lose its length and digest. */
export function isCut(value: string): boolean {
  return /… \[cut: \d+ characters in all, sha256:[0-9a-f]{16}\]$/.test(value);
}

/**
 * The item's input fields and other columns as its result keeps them: a field longer than
 * {@link STORED_FIELD_CHARS} is cut to its opening, and while the fields together hold more
 * than {@link STORED_INPUT_CHARS} characters the longest of them are cut too (among equals,
 * columns before input fields and later before earlier, so the fields a task reads stay whole
 * longest), to shorter openings if cutting every long one to {@link CUT_OPENING_CHARS} is not
 * enough.
 */
export function storedFields(
  input: Record<string, string>,
  columns?: Record<string, string>,
): { input: Record<string, string>; columns?: Record<string, string> } {
  const fields = [
    ...Object.entries(input).map(([key, value]) => ({ group: 0, key, value })),
    ...Object.entries(columns ?? {}).map(([key, value]) => ({ group: 1, key, value })),
  ];
  const stored = fields.map(({ value }) =>
    value.length > STORED_FIELD_CHARS && !isCut(value) ? cutText(value, CUT_OPENING_CHARS) : value,
  );
  let total = stored.reduce((sum, value) => sum + value.length, 0);
  for (const opening of OPENINGS) {
    if (total <= STORED_INPUT_CHARS) break;
    const longestFirst = [...stored.keys()].sort((a, b) => stored[b]!.length - stored[a]!.length || b - a);
    for (const i of longestFirst) {
      if (total <= STORED_INPUT_CHARS) break;
      if (isCut(fields[i]!.value)) continue;
      const cut = cutText(fields[i]!.value, opening);
      if (cut.length >= stored[i]!.length) continue;
      total -= stored[i]!.length - cut.length;
      stored[i] = cut;
    }
  }
  if (stored.every((value, i) => value === fields[i]!.value))
    return { input, ...(columns ? { columns } : {}) };
  const group = (g: number) =>
    Object.fromEntries(fields.flatMap((f, i) => (f.group === g ? [[f.key, stored[i]!]] : [])));
  return { input: group(0), ...(columns ? { columns: group(1) } : {}) };
}

/**
 * A JSON value with its longest strings cut (longest first, to shorter openings as needed) until
 * it is at most `limit` JSON characters; numbers, booleans, keys and short strings stay. The
 * same value always comes out the same. A value that cannot be brought under `limit` this way
 * (thousands of short strings) comes out with every long string cut.
 */
export function boundedJson<T>(value: T, limit: number): T {
  let size = JSON.stringify(value)?.length ?? 0;
  if (size <= limit) return value;
  const copy = JSON.parse(JSON.stringify(value)) as T;
  const slots: { holder: Record<string, unknown> | unknown[]; key: string | number; text: string }[] = [];
  const walk = (node: unknown) => {
    if (Array.isArray(node)) {
      node.forEach((child, i) => {
        if (typeof child === 'string') slots.push({ holder: node, key: i, text: child });
        else walk(child);
      });
    } else if (node !== null && typeof node === 'object') {
      for (const [key, child] of Object.entries(node)) {
        if (typeof child === 'string')
          slots.push({ holder: node as Record<string, unknown>, key, text: child });
        else walk(child);
      }
    }
  };
  walk(copy);
  if (typeof copy === 'string') return capText(copy, limit) as T;
  const current = slots.map((slot) => slot.text);
  for (const opening of OPENINGS) {
    if (size <= limit) break;
    const longestFirst = [...current.keys()].sort((a, b) => current[b]!.length - current[a]!.length || a - b);
    for (const i of longestFirst) {
      if (size <= limit) break;
      const slot = slots[i]!;
      if (isCut(slot.text)) continue;
      const cut = cutText(slot.text, opening);
      const before = JSON.stringify(current[i]).length;
      const after = JSON.stringify(cut).length;
      if (after >= before) continue;
      current[i] = cut;
      (slot.holder as Record<string | number, unknown>)[slot.key] = cut;
      size -= before - after;
    }
  }
  return copy;
}
