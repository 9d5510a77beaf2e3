/**
 * The sequential gate's stopping loop on deterministic streams: the order, when it settles, what
 * the items left end with, that the order results come back in changes nothing, paired
 * conditions against the baseline, and the sweep report's verdict replayed from the results.
 */
import { describe, expect, it } from 'vitest';
import { GateSyntaxError, parseCondition, sequencedCondition } from '../../../shared/lib/gate.js';
import type { ItemResult, RunRecord } from '../../../shared/model/model.js';
import { type Suite, SuiteError, validateSuite, variantSuites } from '../../../shared/registry/suite.js';
import {
  inSeededOrder,
  orderKey,
  replaySequentialGate,
  SequentialGate,
  type SequentialGateSpec,
  SequentialRunControl,
  sequentialPlan,
} from '../../../shared/sweeps/sequential.js';
import { buildSweepReport, prepareSweep } from '../../../shared/sweeps/sweep.js';
import { renderSweepText } from '../../../shared/sweeps/sweep-files.js';
import { suite as gecSuite, suiteInput } from '../../helpers.js';

const N = 400;
const ids = Array.from({ length: N }, (_, i) => `i${i + 1}`);

/** An item's result: right (label = gold TP) or wrong (FP1), one call of $0.002. */
function result(itemId: string, right: boolean, runId = 'run'): ItemResult {
  const label = right ? 'TP' : 'FP1';
  return {
    schemaVersion: 2,
    runId,
    itemId,
    row: Number(itemId.slice(1)),
    status: 'scored',
    gold: 'TP',
    input: { src: itemId, tgt: itemId },
    output: { label, reason: 'r' },
    scores: { label: { kind: 'label', value: label } },
    stages: {
      classify: {
        calls: 1,
        cachedCalls: 0,
        costUsd: 0.002,
        latencyMs: 10,
        usage: { input: 10, output: 5, cached: 0 },
      },
    },
    simulated: false,
    finishedAt: '2025-01-01T00:00:00.000Z',
  };
}

/** Right on items whose number modulo 10 is below `tenths`: an accuracy of tenths/10, spread evenly. */
const rightAt = (tenths: number) => (id: string) => Number(id.slice(1)) % 10 < tenths;

const spec = (conditions: string[], alpha = 0.05, seed = 1): SequentialGateSpec => ({
  conditions,
  alpha,
  seed,
});

/** Runs the loop as the local run does: items in the order, each recorded, until the gate settles. */
function runLoop(control: SequentialRunControl, right: (id: string) => boolean, batch = 1) {
  const ordered = control.begin(
    ids.map((id) => ({ item: { id } })),
    [],
  );
  let next = 0;
  while (next < ordered.length && control.settled() === undefined) {
    // `batch` items in flight at once, recorded in reverse: the gate must read them in order.
    const flight = ordered.slice(next, next + batch);
    next += flight.length;
    for (const m of [...flight].reverse()) control.record(result(m.item.id, right(m.item.id)));
  }
  return { ordered, taken: next, failure: control.settled() };
}

describe('the seeded order', () => {
  it('is a permutation fixed by the seed, whatever the order the items are listed in', () => {
    const a = inSeededOrder(ids, 1, (id) => id);
    expect([...a].sort()).toEqual([...ids].sort());
    expect(inSeededOrder([...ids].reverse(), 1, (id) => id)).toEqual(a);
    expect(inSeededOrder(ids, 2, (id) => id)).not.toEqual(a);
    expect(a.slice(0, 20)).not.toEqual(ids.slice(0, 20));
    expect(orderKey(1, 'i1')).toBe(orderKey(1, 'i1'));
  });
});

describe('the stopping loop', () => {
  const suite = gecSuite();

  it('stops a clearly worse variant early and ends the rest as gate_settled', () => {
    const plan = sequentialPlan(spec(['accuracy >= 0.8']), suite);
    expect(plan.conditionAlpha).toBeCloseTo(0.1);
    const control = new SequentialRunControl(1, (population) => new SequentialGate(plan, population));
    const { taken, failure } = runLoop(control, rightAt(4));
    expect(taken).toBeGreaterThan(10);
    expect(taken).toBeLessThan(N / 2);
    expect(failure?.kind).toBe('gate_settled');
    expect(failure?.message).toMatch(/^the sequential gate settled: reject after \d+ of 400 items/);
  });

  it('promotes a clearly better one, and never stops a variant near its threshold early', () => {
    const plan = sequentialPlan(spec(['accuracy >= 0.8']), suite);
    const good = new SequentialRunControl(1, (population) => new SequentialGate(plan, population));
    const promoted = runLoop(good, () => true);
    expect(promoted.failure?.message).toMatch(/settled: promote/);
    expect(promoted.taken).toBeLessThan(N / 2);
    // 0.8 exactly on a threshold of 0.8: only the last item settles it (the exact figure).
    const close = new SequentialRunControl(1, (population) => new SequentialGate(plan, population));
    const edge = runLoop(close, rightAt(8));
    expect(edge.taken).toBeGreaterThan(N * 0.9);
  });

  it('settles at the same item whatever the order results come back in', () => {
    const plan = sequentialPlan(spec(['accuracy >= 0.8']), suite);
    const settledAfter = (batch: number) => {
      let gate: SequentialGate | undefined;
      const control = new SequentialRunControl(1, (population) => {
        gate = new SequentialGate(plan, population);
        return gate;
      });
      runLoop(control, rightAt(4), batch);
      return gate!.settledAfter();
    };
    expect(settledAfter(8)).toBe(settledAfter(1));
    expect(settledAfter(5)).toBe(settledAfter(1));
  });

  it('a resumed run reads the results it has first, and settles at the same item', () => {
    const plan = sequentialPlan(spec(['accuracy >= 0.8']), suite);
    const straight = { gate: undefined as SequentialGate | undefined };
    runLoop(
      new SequentialRunControl(1, (population) => {
        straight.gate = new SequentialGate(plan, population);
        return straight.gate;
      }),
      rightAt(4),
    );
    const order = inSeededOrder(ids, 1, (id) => id);
    // Killed after 20 items; one more item had failed on the budget and is queued again.
    const done = order.slice(0, 20).map((id) => result(id, rightAt(4)(id)));
    const retried = order[20]!;
    done.push({ ...result(retried, false), status: 'failed', failure: { kind: 'budget', message: 'b' } });
    let resumed: SequentialGate | undefined;
    const control = new SequentialRunControl(1, (population) => {
      resumed = new SequentialGate(plan, population);
      return resumed;
    });
    const pending = order.slice(20).map((id) => ({ item: { id } }));
    const ordered = control.begin(pending, done);
    expect(ordered.map((m) => m.item.id)).toEqual(order.slice(20));
    for (const m of ordered) {
      if (control.settled()) break;
      control.record(result(m.item.id, rightAt(4)(m.item.id)));
    }
    expect(resumed!.population).toBe(N);
    expect(resumed!.settledAfter()).toBe(straight.gate!.settledAfter());
  });

  it('an order-only control never stops (the baseline)', () => {
    const { taken, failure } = runLoop(new SequentialRunControl(1), () => false);
    expect(taken).toBe(N);
    expect(failure).toBeUndefined();
  });

  it('a paired condition reads the difference with the baseline on the same item', () => {
    const plan = sequentialPlan(spec(['delta accuracy >= -0.02']), suite);
    expect(plan.conditions[0]).toMatchObject({ paired: true, op: '>=', against: -0.02 });
    const baseline = new Map(ids.map((id) => [id, result(id, rightAt(9)(id), 'base')]));
    const worse = new SequentialRunControl(1, (population) => new SequentialGate(plan, population, baseline));
    expect(runLoop(worse, rightAt(5)).failure?.message).toMatch(/settled: reject/);
    // The same as the baseline on every item: the difference is 0 ≥ −0.02, promoted.
    const same = new SequentialRunControl(1, (population) => new SequentialGate(plan, population, baseline));
    expect(runLoop(same, rightAt(9)).failure?.message).toMatch(/settled: promote/);
    // `accuracy >= baseline - 0.02` is read the same way.
    expect(sequentialPlan(spec(['accuracy >= baseline - 0.02']), suite).conditions[0]).toMatchObject({
      paired: true,
      against: -0.02,
    });
  });
});

describe('which conditions a sequential gate settles', () => {
  const read = (text: string) => sequencedCondition(parseCondition(text));
  it('per-item rates against a number or the baseline', () => {
    expect(read('accuracy >= 0.8')).toMatchObject({ metric: 'accuracy', paired: false, against: 0.8 });
    expect(read('label.accuracy < 0.3')).toMatchObject({ metric: 'label.accuracy', op: '<' });
  });
  it('refuses the rest, saying why', () => {
    expect(() => read('kappa >= 0.5')).toThrow(GateSyntaxError);
    expect(() => read('p50 latency < 100')).toThrow(/per-item rate/);
    expect(() => read('accuracy == 1')).toThrow(/==/);
    expect(() => read('delta accuracy > 0 with p < 0.05')).toThrow(/gate.alpha/);
    expect(() => read('delta accuracy > noise')).toThrow(/noise/);
    expect(() => read('accuracy[lang=de] >= 0.8')).toThrow(/per-item rate/);
  });
  it('a suite with a sequential gate on another figure is invalid', () => {
    expect(() =>
      validateSuite(
        {
          ...suiteInput({ name: 'sw' }),
          variants: [{ name: 'a' }, { name: 'b', backends: ['sim:b'] }],
          gate: { conditions: ['cost per 10k <= 2'], sequential: true },
        },
        'suite',
      ),
    ).toThrow(SuiteError);
  });
});

describe('the sweep report of a sequential gate', () => {
  const sweepSuite: Suite = validateSuite(
    {
      ...suiteInput({ name: 'sw', backends: ['sim:base'] }),
      variants: [
        { name: 'base', backends: ['sim:base'] },
        { name: 'worse', backends: ['sim:worse'] },
      ],
      baseline: 'base',
      gate: { conditions: ['accuracy >= 0.8'], sequential: true, required: true },
    },
    'sweep',
  );
  const runOf = (name: string, results: ItemResult[]) => {
    const variantSuite = variantSuites(sweepSuite).find((v) => v.variant.name === name)!.suite;
    const run: RunRecord = {
      schemaVersion: 2,
      runId: `run-${name}`,
      suiteName: variantSuite.name,
      suite: variantSuite,
      prompts: {},
      status: 'done',
      total: N,
      invalidRows: 0,
      startedAt: '2025-01-01T00:00:00.000Z',
      finishedAt: '2025-01-01T00:01:00.000Z',
      reportPrefix: '',
      datasetKey: 'data.csv',
      simulated: false,
    };
    return { variant: name, run, results: results.map((r) => ({ ...r, runId: run.runId })) };
  };

  it('gives the verdict it stopped on, the items used and what it saved; the fixed gate is not applied', async () => {
    const plan = sequentialPlan(spec(['accuracy >= 0.8']), variantSuites(sweepSuite)[1]!.suite);
    const control = new SequentialRunControl(1, (population) => new SequentialGate(plan, population));
    const { ordered, taken, failure } = runLoop(control, rightAt(4));
    const results = ordered.map((m, i) =>
      i < taken
        ? result(m.item.id, rightAt(4)(m.item.id))
        : {
            ...result(m.item.id, false),
            status: 'failed' as const,
            failure: failure!,
            scores: {},
            stages: {},
          },
    );
    const base = ids.map((id) => result(id, true));
    const runs = [runOf('base', base), runOf('worse', results)];
    const record = prepareSweep(
      sweepSuite,
      runs.map((r) => ({ variant: r.variant, runId: r.run.runId })),
      { datasetKey: 'data.csv', reportPrefix: '' },
    );
    expect(record.gate).toMatchObject({ sequential: true });
    const report = await buildSweepReport(record, runs, '2025-01-01T00:02:00.000Z');
    const worse = report.variants.find((v) => v.name === 'worse')!;
    expect(worse.verdict).toBe('not promoted');
    expect(worse.sequential).toMatchObject({
      verdict: 'reject',
      alpha: 0.05,
      items: N,
      itemsUsed: taken,
      itemsSkipped: N - taken,
      callsSaved: N - taken,
    });
    expect(worse.sequential!.costSavedUsd).toBeCloseTo((N - taken) * 0.002);
    expect(worse.sequential!.settledAfter).toBeLessThanOrEqual(taken);
    expect(worse.gate?.conditions[0]?.reason).toMatch(/confidence sequence .* fails: failed/);
    expect(report.gate).toMatchObject({ failedRequired: ['worse'], sequential: { alpha: 0.05, seed: 1 } });
    const text = renderSweepText(report);
    expect(text).toContain(`sequential: REJECT settled after ${worse.sequential!.settledAfter} items`);
    expect(text).toContain(`${N - taken} model calls`);
    expect(text).toContain('at most 0.05');
    // Replayed from the same results, the verdict and its item are the same.
    expect(replaySequentialGate(plan, results, base).settledAfter).toBe(worse.sequential!.settledAfter);
  });
});
