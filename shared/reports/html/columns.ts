import { closeSync, openSync, readSync, writeSync } from 'node:fs';
import type { AnyTaskFamily } from '../../family/types.js';
import type { ScorerMetricOptions } from '../../lib/metrics/index.js';
import { type ItemResult, isScored, resultCost, resultLatencyMs, scoreOf } from '../../model/model.js';
import { targetReader } from '../report.js';
import type { ResultView } from '../result-view.js';
import { shownValue, sliceValue } from '../slices.js';
import { COLUMN_JSON, type Column, type ItemCategory, type ItemTable } from './types.js';

type Cell = string | number | boolean | null;

/** Distinct values a column keeps in its dictionary before it gives up and stores values plainly. */
const MAX_DICTIONARY = 4096;
/** Codes a column gathers in memory before they go to the table's file as one piece. */
const CHUNK_CODES = 32_768;
/** Characters of plain values (their JSON) a column gathers before they go to the file. */
const CHUNK_CHARS = 1 << 16;

/** A part of a column: in memory, or where it was written in the table's file. */
type Piece = Uint8Array | { at: number; bytes: number };

/**
 * Where the full pieces of an item table's columns go: one temporary file, appended to and read
 * back by position. A million items' columns are written here as they fill, so what a table holds
 * in memory is its dictionaries and one piece per column, whatever the run's size.
 */
export class ChunkFile {
  private readonly fd: number;
  private size = 0;

  constructor(path: string) {
    this.fd = openSync(path, 'w+');
  }

  put(bytes: Uint8Array): Piece {
    const at = this.size;
    for (let done = 0; done < bytes.length; )
      done += writeSync(this.fd, bytes, done, bytes.length - done, at + done);
    this.size += bytes.length;
    return { at, bytes: bytes.length };
  }

  /** A piece's bytes, read into `into` (a fresh buffer when not given). */
  get(piece: { at: number; bytes: number }, into = new Uint8Array(piece.bytes)): Uint8Array {
    for (let done = 0; done < piece.bytes; ) {
      const read = readSync(this.fd, into, done, piece.bytes - done, piece.at + done);
      if (read === 0) throw new Error('the item table file ended early');
      done += read;
    }
    return into;
  }

  close(): void {
    closeSync(this.fd);
  }
}

const utf8 = new TextEncoder();
const fromUtf8 = new TextDecoder();

/**
 * A column being filled. While its values repeat, it keeps a dictionary of them and one 2-byte
 * code per item (a run of a million items repeats status, labels, scorers and often inputs);
 * once the dictionary is full it keeps each later value's JSON. Either way, full pieces go to
 * the table's file when there is one (else they stay in memory): the column's JSON is the
 * dictionary's values for the codes, then the plain values, read back a piece at a time.
 */
export class ColumnBuilder {
  private readonly dictionary = new Map<Cell, number>();
  /** The codes of the values before the dictionary was given up: full pieces, then `codes[0, filled)`. */
  private readonly codePieces: Piece[] = [];
  private codes = new Uint16Array(256);
  private filled = 0;
  /** Set once the dictionary is given up: every later value's JSON, each after a comma. */
  private plain = false;
  private readonly textPieces: Piece[] = [];
  private text = '';
  private length = 0;

  constructor(private readonly file?: ChunkFile) {}

  push(value: Cell): void {
    this.length += 1;
    if (!this.plain) {
      let code = this.dictionary.get(value);
      if (code === undefined && this.dictionary.size < MAX_DICTIONARY) {
        code = this.dictionary.size;
        this.dictionary.set(value, code);
      }
      if (code !== undefined) {
        this.pushCode(code);
        return;
      }
      this.plain = true;
    }
    this.text += `,${JSON.stringify(value)}`;
    if (this.text.length >= CHUNK_CHARS) this.flushText();
  }

  private pushCode(code: number): void {
    if (this.filled === this.codes.length) {
      if (this.codes.length < CHUNK_CODES) {
        const grown = new Uint16Array(this.codes.length * 2);
        grown.set(this.codes);
        this.codes = grown;
      } else {
        const bytes = new Uint8Array(this.codes.buffer);
        this.codePieces.push(this.file ? this.file.put(bytes) : bytes);
        if (!this.file) this.codes = new Uint16Array(CHUNK_CODES);
        this.filled = 0;
      }
    }
    this.codes[this.filled++] = code;
  }

  private flushText(): void {
    const bytes = utf8.encode(this.text);
    this.textPieces.push(this.file ? this.file.put(bytes) : bytes);
    this.text = '';
  }

  /** The codes, `slice` at most at a time: the stored pieces, then the piece being filled. */
  private *codeSlices(slice: number): Generator<Uint16Array> {
    const buffer = new Uint16Array(CHUNK_CODES);
    const pieces = [...this.codePieces, new Uint8Array(this.codes.buffer, 0, this.filled * 2)];
    for (const piece of pieces) {
      const bytes =
        piece instanceof Uint8Array
          ? piece
          : this.file!.get(piece, new Uint8Array(buffer.buffer, 0, piece.bytes));
      const codes = new Uint16Array(bytes.buffer, bytes.byteOffset, bytes.length / 2);
      for (let start = 0; start < codes.length; start += slice) yield codes.subarray(start, start + slice);
    }
  }

  /**
   * The column's JSON (`JSON.stringify(this.build())`) in pieces of at most `slice` coded values,
   * without building its array (a million items' values as a JavaScript array take 8 MB or more).
   */
  *json(slice = 65_536): Generator<string> {
    const keys = [...this.dictionary.keys()];
    const dictionary = !this.plain && this.dictionary.size * 4 < this.length;
    yield dictionary ? `{"d":${JSON.stringify(keys)},"c":[` : '[';
    let first = true;
    for (const codes of this.codeSlices(slice)) {
      if (codes.length === 0) continue;
      const part = dictionary ? Array.from(codes) : Array.from(codes, (code) => keys[code]!);
      yield `${first ? '' : ','}${JSON.stringify(part).slice(1, -1)}`;
      first = false;
    }
    if (this.text) this.flushText();
    for (const piece of this.textPieces) {
      const text = fromUtf8.decode(piece instanceof Uint8Array ? piece : this.file!.get(piece));
      yield first ? text.slice(1) : text;
      first = false;
    }
    yield dictionary ? ']}' : ']';
  }

  /** Dictionary-coded when that is smaller (few distinct values among many rows), else the values. */
  build(): Column<Cell> {
    return JSON.parse([...this.json()].join('')) as Column<Cell>;
  }
}

/**
 * The most items report.html's item table holds. A run of more shows its first `ITEM_TABLE_ROWS`
 * items in report order and says so above the table; labeled.csv, errors.txt, correct.txt,
 * report.json and report.txt keep every item, and the page's counts and figures are the whole
 * run's. A page of ten million items would weigh hundreds of MB, which no browser opens.
 */
export const ITEM_TABLE_ROWS = 100_000;

/**
 * Which of a run's results a stretch of its item table takes: each result while fewer than `cap`
 * rows (default {@link ITEM_TABLE_ROWS}) come before it, counting `before`, the run's results ahead
 * of the stretch (0: the stretch starts the run).
 */
export interface TableRows {
  cap?: number;
  before?: number;
}

/**
 * How many characters a text cell keeps, by the rows a page shows (a run's items, at most
 * {@link ITEM_TABLE_ROWS}): the page of a 100,000-item table stays tens of MB.
 */
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
 * errors.txt decides it, so the page's "errors" filter shows the same items. The table takes the
 * run's first rows up to its cap (see {@link TableRows}); later results are counted, and none of
 * their cells is made.
 */
export class ItemColumns {
  private readonly columns = new Map<string, ColumnBuilder>();
  private readonly inputs = new Set<string>();
  /** Rows in the table. */
  private n = 0;
  /** Results added, the table's and those past its cap. */
  private added = 0;
  /** The most rows this table takes: the cap less the rows before it. */
  private readonly take: number;
  private readonly scorers: {
    name: string;
    kind: string;
    target: ReturnType<typeof targetReader>;
    verdict: ResultView['scorers'][number]['verdict'];
    options: ScorerMetricOptions;
    columns: Record<'score' | 'by' | 'why' | 'unscored' | 'target', ColumnBuilder>;
  }[];
  private readonly textLimit: number;
  /** The suite's slice columns (`slices`): each item's value, as the report's slices key it. */
  private readonly slices: readonly string[];

  constructor(
    family: AnyTaskFamily,
    suite: Parameters<AnyTaskFamily['scorers']>[0],
    private readonly view: ResultView,
    /** The run's items (with the cap, how much text a cell keeps: see {@link textLimitFor}). */
    items: number,
    private readonly binaryGold: (scorer: string) => boolean,
    /** Where full pieces of the columns go (a run's report passes one); else they stay in memory. */
    private readonly file?: ChunkFile,
    /**
     * A part of a run's table: every column made at once, in the order one pass over the whole
     * run makes them, with the run's input columns, so that every part has the same columns
     * (the page joins each column's parts).
     */
    inputs?: readonly string[],
    { cap = ITEM_TABLE_ROWS, before = 0 }: TableRows = {},
  ) {
    this.take = Math.max(0, cap - before);
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
    this.slices = suite.slices ?? [];
    for (const column of this.slices) this.col(`slice:${column}`);
    // By the rows the run's page shows, the same for every stretch of the run.
    this.textLimit = textLimitFor(Math.min(items, cap));
    if (inputs) {
      for (const name of ItemColumns.BASE) this.col(name);
      for (const key of inputs) {
        this.inputs.add(key);
        this.col(`input:${key}`);
      }
    }
  }

  /** The columns every item has, in the order an item fills them. */
  static readonly BASE = [
    'id',
    'row',
    'status',
    'category',
    'failure',
    'failureMessage',
    'gold',
    'output',
    'cost',
    'latency',
    'simulated',
    'details',
    'raw',
    'stages',
  ] as const;

  /** Rows in the table (the results added, up to the table's cap). */
  get rows(): number {
    return this.n;
  }

  /** The columns' names, in the order they were made (the page's order). */
  names(): string[] {
    return [...this.columns.keys()];
  }

  /** A column's JSON, in pieces (see {@link ColumnBuilder.json}). */
  columnJson(name: string): Iterable<string> {
    return this.columns.get(name)!.json();
  }

  private col(name: string): ColumnBuilder {
    let column = this.columns.get(name);
    if (!column) {
      column = new ColumnBuilder(this.file);
      for (let i = 0; i < this.n; i += 1) column.push(null);
      this.columns.set(name, column);
    }
    return column;
  }

  private text(value: string | undefined): string | null {
    return cut(value, this.textLimit);
  }

  add(r: ItemResult): void {
    this.added += 1;
    if (this.n >= this.take) return;
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
    // Whether the simulator answered it; null when nothing did (an invalid row, a failure before any call).
    this.col('simulated').push(Object.keys(r.stages).length > 0 ? r.simulated : null);
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
    for (const column of this.slices)
      this.col(`slice:${column}`).push(this.text(shownValue(sliceValue(r, column))));
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
      total: this.added,
      textLimit: this.textLimit,
      inputs: [...this.inputs],
      scorers: this.scorers.map((s) => ({
        name: s.name,
        kind: s.kind,
        binaryGold: this.binaryGold(s.name),
        threshold: typeof s.options.threshold === 'number' ? s.options.threshold : null,
      })),
      primary: this.view.primary,
      ...(this.slices.length > 0 ? { slices: [...this.slices] } : {}),
      columns: this.builtColumns(),
    };
  }
}
