/**
 * Fields of a dataset record by name. A suite names a column by its exact name, or by a dot path
 * into the objects and arrays a JSON, JSONL or Parquet row holds (`turns.0.responses.1.text`):
 * at each level the longest key that the rest of the path starts with is taken, so keys that
 * hold dots or spaces resolve too (`results.0.swap = False.winner`). An exact column name
 * always wins over a path. A `*` over an array takes every element (`responses.*.text`).
 * A CSV or TSV cell holding JSON text is read into the same way.
 */

import { DEFAULT_READER_LIMITS, nestsDeeperThan } from './limits.js';

/** What a name reads in a record. */
export type Field =
  /** Text: a string, or a number or boolean as its JSON text. */
  | { kind: 'text'; value: string }
  /** An object or an array: `text` is its JSON text. */
  | { kind: 'structured'; value: unknown; text: string; array: boolean }
  /** A path with `*`: each element's field (undefined where the element lacks the rest of the path). */
  | { kind: 'many'; values: (Field | undefined)[] };

/** A record as the reader gives it: text values, and the parsed values of those that were objects or arrays. */
export interface RecordFields {
  record: Record<string, string>;
  structured?: Record<string, unknown> | undefined;
}

const isContainer = (value: unknown): value is Record<string, unknown> | unknown[] =>
  value !== null && typeof value === 'object';

function leaf(value: unknown, text?: string): Field | undefined {
  if (value === null || value === undefined) return undefined;
  if (isContainer(value))
    return { kind: 'structured', value, text: text ?? JSON.stringify(value), array: Array.isArray(value) };
  return { kind: 'text', value: typeof value === 'string' ? value : String(value) };
}

/** A value a path may step into: a container, or text that is the JSON of one. */
function container(value: unknown): Record<string, unknown> | unknown[] | undefined {
  if (isContainer(value)) return value;
  if (typeof value !== 'string') return undefined;
  const text = value.trim();
  if (!(text.startsWith('{') || text.startsWith('['))) return undefined;
  // Text nested deeper than a reader takes (see limits.ts) is read as text: printing it back
  // would overflow the stack.
  const { maxJsonDepth } = DEFAULT_READER_LIMITS;
  if (nestsDeeperThan(text, maxJsonDepth)) return undefined;
  try {
    const parsed: unknown = JSON.parse(text);
    return isContainer(parsed) ? parsed : undefined;
  } catch {
    return undefined;
  }
}

/** The keys of `value` the path `rest` may continue with, longest first. */
function stepsOf(value: Record<string, unknown> | unknown[], rest: string): string[] {
  const keys = Array.isArray(value) ? ['*', ...value.keys()].map(String) : Object.keys(value);
  return keys.filter((key) => rest === key || rest.startsWith(`${key}.`)).sort((a, b) => b.length - a.length);
}

function walk(value: unknown, rest: string): Field | undefined {
  const inside = container(value);
  if (!inside) return undefined;
  for (const key of stepsOf(inside, rest)) {
    const after = rest === key ? undefined : rest.slice(key.length + 1);
    if (key === '*' && Array.isArray(inside))
      return {
        kind: 'many',
        values: inside.map((element) => (after === undefined ? leaf(element) : walk(element, after))),
      };
    const next = (inside as Record<string, unknown>)[key];
    const found = after === undefined ? leaf(next) : walk(next, after);
    if (found) return found;
  }
  return undefined;
}

/**
 * What `name` reads in a record: its exact column first, else a dot path into it. Undefined
 * when neither resolves (a missing column).
 */
export function readField({ record, structured }: RecordFields, name: string): Field | undefined {
  if (Object.hasOwn(record, name)) {
    const parsed = structured?.[name];
    return parsed === undefined ? { kind: 'text', value: record[name]! } : leaf(parsed, record[name]);
  }
  if (!name.includes('.')) return undefined;
  const top: Record<string, unknown> = { ...record, ...structured };
  return walk(top, name);
}

/** The top-level column a name reads from: itself when exact, else the longest column its path starts with. */
export function rootColumn(record: Record<string, string>, name: string): string | undefined {
  if (Object.hasOwn(record, name)) return name;
  return stepsOf(record, name)[0];
}

/** `x.0.y`: a path into a structured value, as an example for messages. */
export function examplePath(name: string, value: unknown): string {
  let path = name;
  let current = value;
  for (let depth = 0; depth < 4 && isContainer(current); depth += 1) {
    if (Array.isArray(current)) {
      if (current.length === 0) break;
      path += '.0';
      current = current[0];
    } else {
      const key = Object.keys(current)[0];
      if (key === undefined) break;
      path += `.${key}`;
      current = current[key];
    }
  }
  return path === name ? `${name}.0` : path;
}

/** Why a structured value cannot be read as text, naming the column. */
export function structuredProblem(name: string, field: Extract<Field, { kind: 'structured' }>): string {
  return `column ${JSON.stringify(name)} is ${field.array ? 'an array' : 'an object'}: name a field inside it, e.g. ${examplePath(name, field.value)}`;
}
