import type { RawRow } from '../datasets/read.js';
import { buildReport, type Report, reportOrder } from '../reports/report.js';
import { GOLD_COLUMNS, normalizeLabel } from '../tasks/gec/labels.js';
import { taskFor } from '../tasks/registry.js';
import type { ItemResult, RunRecord } from './model.js';
import { type Suite, suiteSchema } from './suite.js';

/** Prediction columns tried in order: other tools' names first, then the gold file layouts. */
export const PREDICTION_COLUMNS = [
  'pred',
  'prediction',
  'judge_label',
  'pred_specialized',
  ...GOLD_COLUMNS,
] as const;

export interface ScorePredictionsInput {
  gold: AsyncIterable<RawRow>;
  predictions: AsyncIterable<RawRow>;
  goldPath: string;
  predictionsPath: string;
  /** Column of the prediction file holding the label; default: the first of PREDICTION_COLUMNS. */
  predictionColumn?: string;
  goldColumn?: string;
  now?: () => Date;
}

/**
 * Metrics of an existing prediction file against a gold file (AQUA layout: `idx,src,tgt` and a
 * label column), joined on the item id. A gold item with no prediction, or with a label that is
 * not a GEC label, is an `Error` row (excluded from the metrics and counted); a prediction
 * with no gold row is reported as an invalid row of its own. Nothing is silently dropped.
 */
export async function scorePredictions(
  input: ScorePredictionsInput,
): Promise<{ report: Report; results: ItemResult[]; run: RunRecord }> {
  const at = (input.now ?? (() => new Date()))().toISOString();
  const suite: Suite = suiteSchema.parse({
    version: 1,
    name: 'score',
    dataset: { path: input.goldPath, columns: input.goldColumn ? { gold: input.goldColumn } : {} },
    task: 'gec',
    judge: 'edit',
    method: 'baseline',
    backends: ['external:predictions'],
  });
  const task = taskFor(suite);
  const runId = `score-${Date.parse(at)}`;

  const predictions = new Map<string, { label: string; row: number; reason?: string }>();
  const results: ItemResult[] = [];
  const invalid = (row: number, where: string, reason: string, record: Record<string, string> = {}) =>
    results.push({
      runId,
      itemId: `${where}-row-${row}`,
      row,
      status: 'failed',
      failure: { kind: 'invalid_row', message: `${where} row ${row}: ${reason}` },
      reason,
      input: record,
      stages: {},
      simulated: false,
      finishedAt: at,
    });

  for await (const raw of input.predictions) {
    if (raw.error !== undefined) {
      invalid(raw.row, 'predictions', raw.error);
      continue;
    }
    const id = (raw.record.idx ?? raw.record.id)?.trim();
    const column = input.predictionColumn ?? PREDICTION_COLUMNS.find((c) => raw.record[c] !== undefined);
    const label = column ? raw.record[column] : undefined;
    if (!id || label === undefined) {
      invalid(
        raw.row,
        'predictions',
        `needs an idx (or id) column and a label column (${PREDICTION_COLUMNS.join('|')})`,
        raw.record,
      );
      continue;
    }
    if (predictions.has(id)) {
      invalid(raw.row, 'predictions', `duplicate idx ${JSON.stringify(id)}`, raw.record);
      continue;
    }
    predictions.set(id, { label, row: raw.row, reason: raw.record.reason ?? raw.record.judge_reason });
  }

  const seen = new Set<string>();
  for await (const raw of input.gold) {
    if (raw.error !== undefined) {
      invalid(raw.row, 'gold', raw.error);
      continue;
    }
    const parsed = task.parseRow(raw.record, raw.row, suite);
    if ('error' in parsed) {
      invalid(raw.row, 'gold', parsed.error, raw.record);
      continue;
    }
    const { item } = parsed;
    if (seen.has(item.id)) {
      invalid(raw.row, 'gold', `duplicate idx ${JSON.stringify(item.id)}`, raw.record);
      continue;
    }
    seen.add(item.id);
    const prediction = predictions.get(item.id);
    const label = normalizeLabel(prediction?.label);
    const base = {
      runId,
      itemId: item.id,
      row: item.row,
      gold: item.gold,
      input: item.input,
      stages: {},
      simulated: false,
      finishedAt: at,
    };
    if (label) results.push({ ...base, status: 'scored', prediction: label, reason: prediction?.reason });
    else {
      const message = prediction
        ? `prediction ${JSON.stringify(prediction.label)} is not a label`
        : 'no prediction for this idx';
      results.push({
        ...base,
        status: 'failed',
        prediction: 'Error',
        failure: { kind: 'parse', message },
        reason: message,
      });
    }
  }
  for (const [id, prediction] of predictions) {
    if (!seen.has(id)) invalid(prediction.row, 'predictions', `idx ${JSON.stringify(id)} has no gold row`);
  }

  const run: RunRecord = {
    runId,
    suiteName: 'score',
    suite,
    prompts: {},
    status: 'done',
    total: results.length,
    invalidRows: results.filter((r) => r.failure?.kind === 'invalid_row').length,
    startedAt: at,
    finishedAt: at,
    reportPrefix: '',
    datasetKey: `${input.goldPath} × ${input.predictionsPath}`,
    simulated: false,
  };
  const ordered = reportOrder(results);
  const report = buildReport(run, ordered, task, at);
  return {
    report: { ...report, backends: [input.predictionsPath], method: 'external' },
    results: ordered,
    run,
  };
}
