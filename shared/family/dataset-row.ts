/**
 * How a dataset row reaches a family's `parseRow`, the same in every shell: the family reads a
 * record by column name as it always has, and the record answers each name as the suite means
 * it (see fields.ts): an exact column, else a dot path into the row's objects and arrays. The
 * values of the roles the suite transforms are ready before the family reads them:
 * `dataset.extract` (a capture group) first, then `dataset.recode` (a map of values), and the
 * gold of several annotators (`columns.gold` a list, or a path with `*`): their majority, or
 * the mean or median of their ratings (`dataset.goldAggregate`). What the family read tells
 * what it did not: the row's other columns travel with the item as `columns`. A gold cell
 * the family read blank, in a suite that does not say some rows have none
 * (`dataset.partialGold`), makes the row invalid: it would leave the metrics' items silently.
 */

import { type Field, readField, rootColumn, structuredProblem } from '../lib/datasets/fields.js';
import type { Item } from '../model/model.js';
import { compilePattern } from '../model/patterns.js';
import type { BaseSuite } from '../model/suite-base.js';

/** What of a family the row reader needs: where it reads its gold and outputs when the suite names none. */
export interface RowDefaults {
  goldColumns?: readonly string[];
  outputColumns?: readonly string[];
  /** Roles whose column may hold an object or an array, read as its JSON text. */
  jsonColumns?: readonly string[];
  /**
   * The gold is a rating on a number scale (a judge with a `range`): several annotators' ratings
   * are averaged unless `dataset.goldAggregate` says otherwise. Without it the gold is a label.
   */
  numericGold?(suite: BaseSuite): boolean;
}

/** How several annotators' labels make the gold: see `dataset.goldAggregate`. */
export type GoldAggregate = 'mode' | 'mean' | 'median';

/** One row as the family reads it, and what came of the reading. */
export interface RowReading {
  /** The record the family's `parseRow` reads (each name resolved as the suite means it). */
  record: Record<string, string>;
  /**
   * Why the row is invalid, found before or while the family read it (the first reason). Given
   * the item the family made of it, also a gold cell it read blank when the suite allows none.
   */
  problem(item?: Pick<Item, 'gold'>): string | undefined;
  /**
   * Several annotators' labels, in order (blank as ""), when the gold is given by several and
   * each was read (an invalid row keeps them too: a tie among them still tells of their agreement).
   */
  annotations?: string[];
  /** The row's columns that nothing read, each cut to `dataset.maxFieldChars`; undefined when none. */
  kept(): Record<string, string> | undefined;
}

export interface RowReader<S extends BaseSuite> {
  /** The suite as the family sees it: several gold columns are one column, their majority. */
  suite: S;
  read(record: Record<string, string>, structured?: Record<string, unknown>): RowReading;
}

/** A path with a `*` step: every element of an array. */
const hasStar = (name: string) => /(^|\.)\*(\.|$)/.test(name);

/** Whether a suite's gold is given by several annotators: `columns.gold` a list, or a path with `*`. */
export function severalAnnotators(columns: { gold?: string | readonly string[] }): boolean {
  const { gold } = columns;
  return Array.isArray(gold) || (typeof gold === 'string' && hasStar(gold));
}

const quote = (value: string) => JSON.stringify(value.length > 60 ? `${value.slice(0, 60)}…` : value);

/** Reads the rows of `suite`'s dataset for a family with these defaults. */
export function rowReader<S extends BaseSuite>(suite: S, family: RowDefaults = {}): RowReader<S> {
  const { columns, recode = {}, extract = {}, goldTie, maxFieldChars } = suite.dataset;
  const aggregate: GoldAggregate =
    suite.dataset.goldAggregate ?? (family.numericGold?.(suite) ? 'mean' : 'mode');
  /** Rows without gold are expected: a blank gold is an item without one. */
  const partial = Boolean(suite.dataset.partialGold || suite.dataset.goldFile);
  const mapped = columns as Record<string, string | readonly string[] | undefined>;
  const gold = columns.gold;
  const several = severalAnnotators(columns);
  /** The name the family reads several annotators' majority by. */
  const goldKey = Array.isArray(gold) ? gold.join(' + ') : gold;
  const familySuite: S = Array.isArray(gold)
    ? { ...suite, dataset: { ...suite.dataset, columns: { ...columns, gold: goldKey } } }
    : suite;
  // RE2, linear in the field: no pattern stalls a run, whatever the field holds (see patterns.ts).
  const patterns = new Map(Object.entries(extract).map(([role, source]) => [role, compilePattern(source)]));
  const roles = new Set([...Object.keys(extract), ...Object.keys(recode), ...(several ? ['gold'] : [])]);
  const defaults = (role: string): string[] => [
    ...(role === 'gold' ? (family.goldColumns ?? []) : role === 'output' ? (family.outputColumns ?? []) : []),
    role,
  ];
  // A given output (and its explanation) is the family's to read: an object there is its JSON text.
  // So is a role the family reads as JSON, by the column the suite names or its defaults.
  const json = new Set(
    [...(family.jsonColumns ?? []), 'output', 'explanation'].flatMap((role) => {
      const name = mapped[role];
      return typeof name === 'string' ? [name] : Array.isArray(name) ? name : defaults(role);
    }),
  );
  /** The names the family may read its gold by: the suite's, else the family's defaults. */
  const goldNames = new Set(goldKey !== undefined ? [goldKey] : defaults('gold'));

  /** A role's value after `extract` and `recode`; a blank value stays blank. */
  const transform = (role: string, value: string): { value: string } | { error: string } => {
    let out = value;
    const pattern = patterns.get(role);
    if (pattern && out.trim() !== '') {
      const match = pattern.exec(out);
      if (!match)
        return {
          error: `${role} ${quote(out)} does not match dataset.extract.${role} (${pattern.source})`,
        };
      out = match.group;
    }
    const map = recode[role];
    if (map) {
      if (Object.hasOwn(map, out)) out = map[out]!;
      else if (Object.hasOwn(map, out.trim())) out = map[out.trim()]!;
    }
    return { value: out };
  };

  return {
    suite: familySuite,
    read(record, structured) {
      const fields = { record, structured };
      const problems: string[] = [];
      /** Every name read, with what it gave the family. */
      const read = new Map<string, string | undefined>();
      /** Columns read for the family's sake but not by it (several annotators' own columns). */
      const touched = new Set<string>();
      /** A gold name the family read that gave a blank value. */
      let blankGold: string | undefined;
      const textOf = (name: string, field: Field | undefined): string | undefined => {
        if (!field) return undefined;
        if (field.kind === 'many') {
          problems.push(
            `column ${JSON.stringify(name)} gives several values (a path with *): only the gold reads several annotators`,
          );
          return undefined;
        }
        if (field.kind === 'structured') {
          if (!json.has(name)) problems.push(structuredProblem(name, field));
          return field.text;
        }
        if (field.value.length > maxFieldChars && !Object.hasOwn(record, name))
          problems.push(
            `field ${JSON.stringify(name)} has ${field.value.length} characters, more than dataset.maxFieldChars (${maxFieldChars})`,
          );
        return field.value;
      };
      const lookup = (name: string): string | undefined => {
        if (read.has(name)) return read.get(name);
        const text = textOf(name, readField(fields, name));
        read.set(name, text);
        return text;
      };
      const value = (name: string): string | undefined => {
        const text = lookup(name);
        if (text !== undefined && text.trim() === '' && goldNames.has(name)) blankGold ??= name;
        return text;
      };

      let annotations: string[] | undefined;
      for (const role of roles) {
        if (role === 'gold' && several && goldKey !== undefined) {
          const sources = Array.isArray(gold) ? gold : [goldKey];
          const votes: (string | undefined)[] = [];
          for (const source of sources) {
            const field = readField(fields, source);
            touched.add(source);
            if (field?.kind === 'many') votes.push(...field.values.map((f) => textOf(source, f)));
            else votes.push(textOf(source, field));
          }
          if (votes.every((vote) => vote === undefined)) continue;
          let readable = true;
          const labels = votes.map((vote) => {
            const done = transform(role, vote ?? '');
            if ('error' in done) {
              problems.push(done.error);
              readable = false;
              return vote ?? '';
            }
            return done.value;
          });
          if (readable) annotations = labels;
          const aggregated = goldOf(labels, aggregate, goldTie ?? 'invalid');
          if (aggregated.error !== undefined) problems.push(aggregated.error);
          read.set(goldKey, aggregated.value);
          continue;
        }
        const name = mapped[role];
        const names =
          typeof name === 'string'
            ? [name]
            : Array.isArray(name)
              ? name
              : defaults(role)
                  .filter((candidate) => readField(fields, candidate) !== undefined)
                  .slice(0, 1);
        for (const column of names) {
          const text = lookup(column);
          if (text === undefined) continue;
          const done = transform(role, text);
          if ('error' in done) problems.push(done.error);
          else read.set(column, done.value);
        }
      }

      const view = new Proxy(record, {
        get(target, key, receiver) {
          if (typeof key !== 'string') return Reflect.get(target, key, receiver);
          return value(key);
        },
        has(target, key) {
          if (typeof key !== 'string') return Reflect.has(target, key);
          return value(key) !== undefined;
        },
      });
      return {
        record: view,
        problem: (item) => {
          if (problems[0] !== undefined) return problems[0];
          if (item && item.gold === undefined && blankGold !== undefined && !partial)
            return `the gold (${several ? 'every annotator' : `column ${JSON.stringify(blankGold)}`}) is blank: a row without gold is invalid unless dataset.partialGold says some rows have none by design`;
          return undefined;
        },
        ...(annotations ? { annotations } : {}),
        kept: () => {
          const used = new Set<string>();
          for (const name of [...read.keys(), ...touched]) {
            const root = rootColumn(record, name);
            if (root !== undefined) used.add(root);
          }
          const kept = Object.entries(record).filter(([name]) => !used.has(name));
          if (kept.length === 0) return undefined;
          return Object.fromEntries(
            kept.map(([name, text]) => [
              name,
              text.length > maxFieldChars ? text.slice(0, maxFieldChars) : text,
            ]),
          );
        },
      };
    },
  };
}

/**
 * The most frequent of the annotators' labels (blank ones are no vote); a tie is invalid, or
 * goes to the tied label the earliest annotator gave (`first`). No vote at all: a blank gold.
 */
export function majorityOf(
  labels: readonly string[],
  tie: 'first' | 'invalid',
): { value: string; error?: undefined } | { value: undefined; error: string } {
  const counts = new Map<string, number>();
  for (const label of labels) if (label.trim() !== '') counts.set(label, (counts.get(label) ?? 0) + 1);
  if (counts.size === 0) return { value: '' };
  const most = Math.max(...counts.values());
  const tied = [...counts].filter(([, n]) => n === most).map(([label]) => label);
  if (tied.length === 1 || tie === 'first') return { value: tied[0]! };
  return {
    value: undefined,
    error: `the annotators tie: ${[...counts].map(([label, n]) => `${quote(label)} ×${n}`).join(', ')} (dataset.goldTie "first" takes the label the earliest annotator gave)`,
  };
}

/**
 * The gold of several annotators' labels (blank ones are no vote) by `rule`: `mode` their
 * majority ({@link majorityOf}, a tie by `tie`); `mean` the mean of their ratings; `median` the
 * middle rating (the mean of the two middle ones when their number is even). A rating that is
 * not a number makes the row invalid under `mean` and `median`. No vote at all: a blank gold.
 */
export function goldOf(
  labels: readonly string[],
  rule: GoldAggregate,
  tie: 'first' | 'invalid',
): { value: string; error?: undefined } | { value: undefined; error: string } {
  if (rule === 'mode') return majorityOf(labels, tie);
  const ratings: number[] = [];
  for (const label of labels) {
    if (label.trim() === '') continue;
    const x = Number(label.trim());
    if (!Number.isFinite(x))
      return {
        value: undefined,
        error: `an annotator's rating ${quote(label)} is not a number (dataset.goldAggregate "${rule}" needs numbers; "mode" takes the most frequent label)`,
      };
    ratings.push(x);
  }
  if (ratings.length === 0) return { value: '' };
  if (rule === 'mean') return { value: String(ratings.reduce((a, b) => a + b, 0) / ratings.length) };
  ratings.sort((a, b) => a - b);
  const mid = ratings.length >> 1;
  return {
    value: String(ratings.length % 2 === 1 ? ratings[mid]! : (ratings[mid - 1]! + ratings[mid]!) / 2),
  };
}
