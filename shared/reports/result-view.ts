import type { ItemResult, ScoreKind } from '../model/model.js';

/** What the item-level files (labeled.csv, errors.txt, report.html's table) read of each result. */
/** What the item files need to know of a run: its scorers (kinds, verdicts, the primary one) and how to show an output. */
export interface ResultView {
  scorers: { name: string; kind: ScoreKind; verdict(result: ItemResult): boolean | undefined }[];
  primary: string;
  outputText(output: unknown): string | undefined;
  /** Times each item was scored (`run.repeats`): above 1, labeled.csv has a column per repeat. */
  repeats?: number;
  /** The gold is several annotators' (see `severalAnnotators`): labeled.csv has their labels. */
  annotators?: boolean;
}
