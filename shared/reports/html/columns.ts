import type { AnyTaskFamily } from '../../family/types.js';
import type { ScorerMetricOptions } from '../../lib/metrics/index.js';
import { type ItemResult, isScored, resultCost, resultLatencyMs, scoreOf } from '../../model/model.js';
import { targetReader } from '../report.js';
import type { ResultView } from '../result-view.js';
import { COLUMN_JSON, type Column, type ItemCategory, type ItemTable } from './types.js';

type Cell = string | number | boolean | null;

/** Distinct values a column keeps in its dictionary before it gives up and stores values plainly. */
const MAX_DICTIONARY = 4096;

/**
 * A column being filled. While its values repeat, it keeps a dictionary of them and one 2-byte
 * code per item (a run of a million items repeats status, labels, scorers and often inputs);
 * once the dictionary is full it turns the codes back into values and keeps values from then on.
 */
export class ColumnBuilder {
  /** The values, once the dictionary is given up. */
  private values: Cell[] | undefined;
  /** Each item's code into the dictionary, while there is one (MAX_DICTIONARY fits 16 bits). */
  private codes: Uint16Array | undefined = new Uint16Array(256);
  private length = 0;
  private readonly dictionary = new Map<Cell, number>();

  push(value: Cell): void {
    if (this.values || !this.codes) {
      this.values!.push(value);
      this.length += 1;
      return;
    }
    let code = this.dictionary.get(value);
    if (code === undefined) {
      if (this.dictionary.size >= MAX_DICTIONARY) {
        this.values = this.decoded();
        this.values.push(value);
        this.length += 1;
        this.codes = undefined;
        this.dictionary.clear();
        return;
      }
      code = this.dictionary.size;
      this.dictionary.set(value, code);
    }
    if (this.length === this.codes.length) {
      const grown = new Uint16Array(this.codes.length * 2);
      grown.set(this.codes);
      this.codes = grown;
    }
    this.codes[this.length] = code;
    this.length += 1;
  }

  /** Every value so far, from the codes. */
  private decoded(): Cell[] {
    const keys = [...this.dictionary.keys()];
    return Array.from(this.codes!.subarray(0, this.length), (code) => keys[code]!);
  }

  /**
   * `JSON.stringify(this.build())` in pieces of at most `slice` values, without building the
   * column's array (a million items' codes as a JavaScript array take 8 MB a column).
   */
  *json(slice = 65_536): Generator<string> {
    const codes = this.codes?.subarray(0, this.length);
    const dictionary = !this.values && this.dictionary.size * 4 < this.length;
    const keys = this.values ? [] : [...this.dictionary.keys()];
    yield dictionary ? `{"d":${JSON.stringify(keys)},"c":[` : '[';
    for (let start = 0; start < this.length; start += slice) {
      const end = Math.min(start + slice, this.length);
      const part = this.values
        ? this.values.slice(start, end)
        : dictionary
          ? Array.from(codes!.subarray(start, end))
          : Array.from(codes!.subarray(start, end), (code) => keys[code]!);
      yield `${start > 0 ? ',' : ''}${JSON.stringify(part).slice(1, -1)}`;
    }
    yield dictionary ? ']}' : ']';
  }

  /** Dictionary-coded when that is smaller: few distinct values among many rows. */
  build(): Column<Cell> {
    if (this.values) return this.values;
    if (this.dictionary.size * 4 < this.length) {
      return { d: [...this.dictionary.keys()], c: Array.from(this.codes!.subarray(0, this.length)) };
    }
    return this.decoded();
  }
}

/** How many characters a text cell keeps, by run size: the page of a 100,000-item run stays tens of MB. */
export function textLimitFor(items: number): number {
  if (items > 20_000) return 500;
  if (items > 2_000) return 4_000;
  return 20_000;
}

function cut(text: string | undefined, limit: number): string | null {
  if (text === undefined) return null;
  if (text.length <= limit) return text;
  return `${text.slice(0, limit)}… [cut in this page: ${text.length} characters in all]`;
}

const rounded = (value: number, digits: number) => {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
};

/**
 * The item table of a run page, one result at a time (in report order): each item's inputs,
 * gold, output, every score with what decided it and why, its cost, latency, the family's
 * details and the raw answer when the result kept one. An item's `category` is decided as
 * errors.txt decides it, so the page's "errors" filter shows the same items.
 */
export class ItemColumns {
  private readonly columns = new Map<string, ColumnBuilder>();
  private readonly inputs = new Set<string>();
  private n = 0;
  private readonly scorers: {
    name: string;
    kind: string;
    target: ReturnType<typeof targetReader>;
    verdict: ResultView['scorers'][number]['verdict'];
    options: ScorerMetricOptions;
    columns: Record<'score' | 'by' | 'why' | 'unscored' | 'target', ColumnBuilder>;
  }[];
  private readonly textLimit: number;

  constructor(
    family: AnyTaskFamily,
    suite: Parameters<AnyTaskFamily['scorers']>[0],
    private readonly view: ResultView,
    items: number,
    private readonly binaryGold: (scorer: string) => boolean,
  ) {
    const scorers = family.scorers(suite);
    this.scorers = view.scorers.map((s) => ({
      name: s.name,
      kind: s.kind,
      target: targetReader(scorers[s.name]!),
      verdict: s.verdict,
      options: (scorers[s.name]!.metrics ?? {}) as ScorerMetricOptions,
      columns: {
        score: this.col(`score:${s.name}`),
        by: this.col(`by:${s.name}`),
        why: this.col(`why:${s.name}`),
        unscored: this.col(`unscored:${s.name}`),
        target: this.col(`target:${s.name}`),
      },
    }));
    this.textLimit = textLimitFor(items);
  }

  private col(name: string): ColumnBuilder {
    let column = this.columns.get(name);
    if (!column) {
      column = new ColumnBuilder();
      for (let i = 0; i < this.n; i += 1) column.push(null);
      this.columns.set(name, column);
    }
    return column;
  }

  private text(value: string | undefined): string | null {
    return cut(value, this.textLimit);
  }

  add(r: ItemResult): void {
    const primary = this.scorers.find((s) => s.name === this.view.primary)!;
    let category: ItemCategory;
    if (r.status === 'failed') category = 'failed';
    else if (this.scorers.some((s) => !isScored(scoreOf(r, s.name, s.kind as never)))) category = 'unscored';
    else {
      const verdict = primary.verdict(r);
      category = verdict === false ? 'wrong' : verdict === true ? 'right' : 'undecided';
    }
    this.col('id').push(r.itemId);
    this.col('row').push(r.row);
    this.col('status').push(r.status);
    this.col('category').push(category);
    this.col('failure').push(r.failure?.kind ?? null);
    this.col('failureMessage').push(this.text(r.failure?.message));
    this.col('gold').push(this.text(r.gold));
    // The family's text of the output, else the output as stored (a judge's score and reason).
    const output =
      this.view.outputText(r.output) ?? (r.output === undefined ? undefined : JSON.stringify(r.output));
    this.col('output').push(this.text(output));
    this.col('cost').push(rounded(resultCost(r), 10));
    const latency = resultLatencyMs(r);
    this.col('latency').push(latency === undefined ? null : rounded(latency, 1));
    this.col('simulated').push(r.simulated);
    this.col('details').push(r.details ? this.text(JSON.stringify(r.details)) : null);
    this.col('raw').push(this.text(r.raw));
    this.col('stages').push(Object.keys(r.stages).length > 0 ? JSON.stringify(r.stages) : null);
    for (const s of this.scorers) {
      const score = scoreOf(r, s.name, s.kind as never);
      const target = s.target(r);
      s.columns.score.push(isScored(score) ? score.value : null);
      s.columns.by.push(score.decidedBy ?? null);
      s.columns.why.push(this.text(isScored(score) ? score.explanation : score.unscored.message));
      s.columns.unscored.push(isScored(score) ? null : score.unscored.kind);
      s.columns.target.push(target === undefined ? null : (target as Cell));
    }
    for (const key of Object.keys(r.input)) this.inputs.add(key);
    for (const key of this.inputs) this.col(`input:${key}`).push(this.text(r.input[key]));
    this.n += 1;
  }

  /**
   * The columns by name, each built when read (and again on each read): the page writes them one
   * at a time, so a million items' columns are never all built at once.
   */
  private builtColumns(): ItemTable['columns'] {
    const columns: ItemTable['columns'] = {};
    for (const [name, column] of this.columns)
      Object.defineProperty(columns, name, { enumerable: true, get: () => column.build() });
    Object.defineProperty(columns, COLUMN_JSON, {
      enumerable: false,
      value: (name: string) => this.columns.get(name)!.json(),
    });
    return columns;
  }

  table(): ItemTable {
    return {
      n: this.n,
      textLimit: this.textLimit,
      inputs: [...this.inputs],
      scorers: this.scorers.map((s) => ({
        name: s.name,
        kind: s.kind,
        binaryGold: this.binaryGold(s.name),
        threshold: typeof s.options.threshold === 'number' ? s.options.threshold : null,
      })),
      primary: this.view.primary,
      columns: this.builtColumns(),
    };
  }
}
