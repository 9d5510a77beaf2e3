/**
 * The rows the self-preference figures are computed from, gathered one result at a time and
 * mergeable: a run tallied in parts gives the figures one pass gives. Each item keeps its
 * producer and judge (as codes into tables of the ids seen), the judge's verdict and the gold
 * as numbers (see `numericVerdict`), and whether each is known; the figures are those of
 * {@link selfPreference} over the items in order, so the bootstrap intervals are the same.
 */
import type { ScoreValue } from '../../model/model.js';
import type { SelfPreferenceBias } from '../../model/report.js';
import {
  numericVerdict,
  type SelfPreferenceItem,
  type SelfPreferenceOptions,
  selfPreference,
} from './self-preference.js';
import { codeOf, type NumberArray, NumberColumn } from './stats.js';

/** {@link SelfPreferenceRows} saved. */
export interface SelfPreferenceRowsState {
  column: string;
  producers: string[];
  judges: string[];
  producer: NumberArray;
  judge: NumberArray;
  verdict: NumberArray;
  gold: NumberArray;
  /** Per item: 1 when the verdict is known, 2 when the gold is, 3 both. */
  known: NumberArray;
  noProducer: number;
  noJudge: number;
}

const VERDICT = 1;
const GOLD = 2;

/** The items of one scorer whose producer and judge are known, in report order. */
export class SelfPreferenceRows {
  private readonly producers: string[] = [];
  private readonly producerCodes = new Map<string, number>();
  private readonly judges: string[] = [];
  private readonly judgeCodes = new Map<string, number>();
  private producer = new NumberColumn();
  private judge = new NumberColumn();
  private verdict = new NumberColumn();
  private gold = new NumberColumn();
  private known = new NumberColumn();
  /** Items whose row names no producer (blank or missing column). */
  private noProducer = 0;
  /** Items whose judge's model is not known (the output was given, or several backends could have judged it). */
  private noJudge = 0;

  /**
   * @param column The dataset column naming each output's producer (shown with the figures).
   * @param options How the scorer's values read as numbers (positive labels, a label order).
   */
  constructor(
    readonly column: string,
    private readonly options: Pick<SelfPreferenceOptions, 'positive' | 'labelOrder'> = {},
  ) {}

  /**
   * The next item: who produced the output, which model judged it, the verdict and the gold
   * (undefined when it has none). An item without a producer or a judge is only counted.
   */
  add(
    producer: string | undefined,
    judge: string | undefined,
    verdict: ScoreValue | undefined,
    gold: ScoreValue | undefined,
  ): void {
    if (producer === undefined || producer.trim() === '') {
      this.noProducer += 1;
      return;
    }
    if (judge === undefined || judge.trim() === '') {
      this.noJudge += 1;
      return;
    }
    this.producer.push(codeOf(this.producers, this.producerCodes, producer.trim()));
    this.judge.push(codeOf(this.judges, this.judgeCodes, judge.trim()));
    this.verdict.push(verdict === undefined ? 0 : numericVerdict(verdict, this.options, 'a verdict'));
    this.gold.push(gold === undefined ? 0 : numericVerdict(gold, this.options, 'a gold value'));
    this.known.push((verdict === undefined ? 0 : VERDICT) | (gold === undefined ? 0 : GOLD));
  }

  /** Appends `later`, the rows of the results right after this one's; its codes are mapped into these tables. */
  merge(later: SelfPreferenceRows): void {
    const producers = later.producers.map((id) => codeOf(this.producers, this.producerCodes, id));
    const judges = later.judges.map((id) => codeOf(this.judges, this.judgeCodes, id));
    for (const code of later.producer.values()) this.producer.push(producers[code]!);
    for (const code of later.judge.values()) this.judge.push(judges[code]!);
    this.verdict.merge(later.verdict);
    this.gold.merge(later.gold);
    this.known.merge(later.known);
    this.noProducer += later.noProducer;
    this.noJudge += later.noJudge;
  }

  toState(): SelfPreferenceRowsState {
    return {
      column: this.column,
      producers: [...this.producers],
      judges: [...this.judges],
      producer: this.producer.toState(),
      judge: this.judge.toState(),
      verdict: this.verdict.toState(),
      gold: this.gold.toState(),
      known: this.known.toState(),
      noProducer: this.noProducer,
      noJudge: this.noJudge,
    };
  }

  static fromState(
    state: SelfPreferenceRowsState,
    options: Pick<SelfPreferenceOptions, 'positive' | 'labelOrder'> = {},
  ): SelfPreferenceRows {
    const rows = new SelfPreferenceRows(state.column, options);
    for (const id of state.producers) codeOf(rows.producers, rows.producerCodes, id);
    for (const id of state.judges) codeOf(rows.judges, rows.judgeCodes, id);
    rows.producer = NumberColumn.fromState(state.producer);
    rows.judge = NumberColumn.fromState(state.judge);
    rows.verdict = NumberColumn.fromState(state.verdict);
    rows.gold = NumberColumn.fromState(state.gold);
    rows.known = NumberColumn.fromState(state.known);
    rows.noProducer = state.noProducer;
    rows.noJudge = state.noJudge;
    return rows;
  }

  /** The items as {@link selfPreference} reads them (verdicts and gold already numbers). */
  items(): SelfPreferenceItem[] {
    const producer = this.producer.values();
    const judge = this.judge.values();
    const verdict = this.verdict.values();
    const gold = this.gold.values();
    const known = this.known.values();
    return Array.from({ length: producer.length }, (_, i) => ({
      producer: this.producers[producer[i]!]!,
      judge: this.judges[judge[i]!]!,
      verdict: known[i]! & VERDICT ? verdict[i]! : undefined,
      gold: known[i]! & GOLD ? gold[i]! : undefined,
    }));
  }

  /** report.json `scores.<scorer>.bias.selfPreference`. */
  figures(): SelfPreferenceBias {
    return {
      column: this.column,
      noProducer: this.noProducer,
      noJudge: this.noJudge,
      ...selfPreference(this.items()),
    };
  }
}
