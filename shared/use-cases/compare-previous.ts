import { StoredDataError } from '../model/codec.js';
import type { RunRecord } from '../model/model.js';
import type { Report } from '../model/report.js';
import type { BlobStore } from '../ports/ports.js';
import type { ComparableRun } from '../reports/compare-parts.js';
import { type Comparison, comparisonSummary } from '../reports/compare-runs.js';
import { writeComparisonFiles } from '../reports/comparison.js';

/**
 * Compares a run with the earlier run `found` (see `comparableRun`): the comparison's summary
 * goes in `report`, its files next to the run's report files; returns their keys. A comparison
 * of no scored pair says nothing and is left out. When the earlier run's results cannot be read
 * (found so, or met while comparing), the report says why instead, and is still written.
 */
export async function compareWithPrevious(
  reports: BlobStore,
  run: RunRecord,
  report: Report,
  found: ComparableRun,
  compare: () => Promise<Comparison>,
): Promise<string[]> {
  if ('error' in found) {
    report.comparison = { baseRunId: found.run.runId, error: found.error };
    return [];
  }
  let comparison: Comparison;
  try {
    comparison = await compare();
  } catch (error) {
    if (!(error instanceof StoredDataError)) throw error;
    report.comparison = { baseRunId: found.run.runId, error: error.message };
    return [];
  }
  if ((comparison.scores[comparison.primaryScorer]?.n ?? 0) === 0) return [];
  report.comparison = { ...comparisonSummary(comparison) };
  return writeComparisonFiles(reports, run.reportPrefix, comparison);
}
