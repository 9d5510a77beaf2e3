/**
 * The ensemble as a judge panel: each backend's vote is read from the result's details (a
 * failed vote is no label), the family's report tally gives report.json `panel` from them, and
 * tallies of consecutive parts, saved and merged, give the panel one tally gives.
 */
import { deserialize, serialize } from 'node:v8';
import { describe, expect, it } from 'vitest';
import { ensembleLabels } from '../../../shared/families/gec/panel.js';
import { gecFamily } from '../../../shared/families/gec/task.js';
import type { AnyTaskFamily, FamilyReportTally } from '../../../shared/family/types.js';
import { panelAgreement } from '../../../shared/lib/metrics/panel.js';
import type { ItemResult } from '../../../shared/model/model.js';
import { suite } from '../../helpers.js';

const BACKENDS = ['sim:a', 'sim:b', 'sim:c'];

function result(gold: string | undefined, labels: string[], row: number): ItemResult {
  return {
    schemaVersion: 2,
    runId: 'r',
    itemId: `i${row}`,
    row,
    status: 'scored',
    ...(gold === undefined ? {} : { gold }),
    scores: { label: { kind: 'label', value: labels[0]! } },
    input: {},
    details: {
      votes: labels.map((label, i) => ({ backend: BACKENDS[i], label, weight: 1 })),
      unanimous: new Set(labels).size === 1,
    },
    stages: {},
    simulated: false,
    finishedAt: '',
  };
}

const ENSEMBLE = suite({ method: 'ensemble', backends: BACKENDS });
const family = gecFamily as AnyTaskFamily;

describe('ensembleLabels', () => {
  it("reads each backend's vote; a failed vote is no label", () => {
    const labels = ensembleLabels(result('TP', ['TP', 'Error', 'FP1'], 1));
    expect({ ...labels }).toEqual({ 'sim:a': 'TP', 'sim:b': undefined, 'sim:c': 'FP1' });
  });

  it('is undefined for a result without votes', () => {
    expect(ensembleLabels({ ...result('TP', ['TP'], 1), details: { path: [] } })).toBeUndefined();
    expect(ensembleLabels({ ...result('TP', ['TP'], 1), details: undefined })).toBeUndefined();
  });
});

describe('the ensemble report tally', () => {
  // Gold and the three votes of 12 items: a and b err together on items 3 and 4, c mostly alone.
  const rows: [string, string[]][] = [
    ['TP', ['TP', 'TP', 'TP']],
    ['TP', ['TP', 'TP', 'FP1']],
    ['FP1', ['TP', 'TP', 'FP1']],
    ['FP2', ['FP1', 'FP1', 'FP2']],
    ['TN', ['TN', 'TN', 'TN']],
    ['TN', ['TN', 'TN', 'FP3']],
    ['FP3', ['FP3', 'FP3', 'FP3']],
    ['TP', ['TP', 'Error', 'TP']],
    ['FP1', ['FP1', 'FP1', 'TP']],
    ['TP', ['FP2', 'TP', 'TP']],
    ['FP2', ['FP2', 'FP2', 'FP1']],
    ['TN', ['TN', 'TN', 'TN']],
  ];
  const results = [
    ...rows.map(([gold, labels], i) => result(gold, labels, i + 1)),
    result(undefined, ['TP', 'TP', 'TP'], 99),
  ];
  const tallyOf = (part: readonly ItemResult[]) => {
    const tally = family.reportTally!(ENSEMBLE)!;
    for (const r of part) tally.add(r);
    return tally;
  };

  it('gives report.json panel: the figures of the votes on the items with gold', async () => {
    const { panel } = await tallyOf(results).section();
    const expected = panelAgreement(
      rows.map(([gold, labels]) => ({
        gold,
        labels: Object.fromEntries(labels.map((l, i) => [BACKENDS[i], l === 'Error' ? undefined : l])),
      })),
      { judges: BACKENDS },
    );
    expect(panel).toEqual({ source: 'ensemble backends', ...expected });
    // By hand: a is right on 9 of 12, b on 9 of 11 (one failed vote), c on 8 of 12.
    expect(panel!.accuracy['sim:a']).toMatchObject({ value: 9 / 12, n: 12 });
    expect(panel!.accuracy['sim:b']).toMatchObject({ value: 9 / 11, n: 11 });
    expect(panel!.accuracy['sim:c']).toMatchObject({ value: 8 / 12, n: 12 });
    expect(panel!.effectiveJudges.value).toBeGreaterThanOrEqual(1);
    expect(panel!.effectiveJudges.value).toBeLessThanOrEqual(3);
  });

  it('merges saved parts into the panel of one tally', async () => {
    const whole = await tallyOf(results).section();
    for (const at of [1, 5, 12]) {
      const first = family.reportTally!(
        ENSEMBLE,
        deserialize(serialize(tallyOf(results.slice(0, at)).toState())),
      )!;
      const second = family.reportTally!(
        ENSEMBLE,
        deserialize(serialize(tallyOf(results.slice(at)).toState())),
      )!;
      (first as FamilyReportTally).merge(second);
      expect((await first.section()).panel).toEqual(whole.panel);
    }
  });

  it('a method without several voting backends has no panel', async () => {
    const tally = family.reportTally!(suite({ method: 'baseline' }))!;
    for (const r of results) tally.add(r);
    expect((await tally.section()).panel).toBeUndefined();
  });
});
