/**
 * Judge repeats as a user runs them: `assay run --simulate --repeats 3` on the tone judge scores
 * every item three times and reports how stable the verdicts are (flip rate, Krippendorff's
 * alpha with its CI, the noise floor of each headline metric), keeps each repeat's label in
 * labeled.csv, and holds the comparison with the previous run against that noise floor. The
 * first repeat is the run without repeats, call for call.
 */
import { cp, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type RunEvent, runLocal } from '../../cli/local-run.js';
import { noiseFloor } from '../../shared/lib/metrics/reliability.js';
import type { Report } from '../../shared/model/report.js';
import { useVendorFake } from '../fakes/use-vendor-fake.js';
import type { FakeCall, FakeReply } from '../fakes/vendor-fake.js';
import { assayCli, REPO, tempDir } from '../helpers.js';

const fake = useVendorFake();

const readReport = async (dir: string) =>
  JSON.parse(await readFile(join(dir, 'report.json'), 'utf8')) as Report;

/** labeled.csv as rows of cells by header. */
async function labeled(dir: string): Promise<{ header: string[]; rows: Record<string, string>[] }> {
  const text = (await readFile(join(dir, 'labeled.csv'), 'utf8')).replace(/^\uFEFF/, '');
  const [head, ...lines] = text.split('\r\n').filter((l) => l !== '');
  const header = head!.split(',');
  const rows = lines.map((line) => {
    // RFC 4180: free-text cells may be quoted, with commas and doubled quotes inside.
    const cells: string[] = [];
    let cell = '';
    let quoted = false;
    for (let i = 0; i < line.length; i++) {
      const ch = line[i]!;
      if (quoted) {
        if (ch === '"' && line[i + 1] === '"') {
          cell += '"';
          i++;
        } else if (ch === '"') quoted = false;
        else cell += ch;
      } else if (ch === '"') quoted = true;
      else if (ch === ',') {
        cells.push(cell);
        cell = '';
      } else cell += ch;
    }
    cells.push(cell);
    return Object.fromEntries(header.map((h, i) => [h, cells[i] ?? '']));
  });
  return { header, rows };
}

describe('judge repeats, end to end', { timeout: 180_000 }, () => {
  it('assay run --simulate --repeats 3 reports flip rate, alpha with CI and noise floors', async () => {
    const dir = await tempDir('assay-repeats-');
    const runs = join(dir, 'runs');
    const suite = 'examples/reply-tone.suite.json';
    await assayCli(
      ['run', suite, '--simulate', '--runs', runs, '--out', join(runs, 'once'), '--no-progress'],
      dir,
    );
    const { stdout } = await assayCli(
      [
        'run',
        suite,
        '--simulate',
        '--repeats',
        '3',
        '--runs',
        runs,
        '--out',
        join(runs, 'thrice'),
        '--no-progress',
      ],
      dir,
    );

    // The terminal: the reliability lines under the label scorer's headline.
    expect(stdout).toMatch(
      /repeats 3 \(48 items with two or more values\): flip rate 0\.\d{3} {2}ties \d+ {2}Krippendorff's alpha -?\d\.\d{3} \(too few items for an interval \(n 48 < 200\)\) \(nominal\)/,
    );
    expect(stdout).toMatch(
      /noise floor \(SD across single-repeat runs\): accuracy ±\d\.\d{3} {2}macro F1 ±\d\.\d{3} {2}Cohen's kappa ±\d\.\d{3}/,
    );
    expect(stdout).toMatch(
      /compared with reply-tone-\w+: accuracy [+-]\d\.\d{3} \(p \d\.\d{3}, (within|beyond) noise ±\d\.\d{3}\)/,
    );

    const once = await readReport(join(runs, 'once'));
    const thrice = await readReport(join(runs, 'thrice'));
    expect(once.scores.label!.reliability).toBeUndefined();
    const r = thrice.scores.label!.reliability!;
    expect(r).toMatchObject({ repeats: 3, n: 48, alpha: { level: 'nominal', n: 48 } });
    expect(r.alpha.value).not.toBeNull();
    // 48 items: below alpha's 200, its bootstrap interval is withheld (its coverage is poor there).
    expect(r.alpha.ci).toBeUndefined();
    expect(r.alpha.reason).toBe('too few items for an interval (n 48 < 200)');
    expect(Object.keys(r.noiseFloor)).toEqual(['accuracy', 'macroF1', 'kappa']);
    // The simulator's noise is drawn per repeat: some items flip, not all.
    expect(r.flipRate).toBeGreaterThan(0);
    expect(r.flipRate).toBeLessThan(1);
    // Repeat 1 is the run without repeats; the floor is the SD of the three single-repeat runs.
    expect(r.perRepeat.accuracy![0]).toBe(once.metrics.accuracy);
    expect(r.perRepeat.kappa![0]).toBe(once.metrics.kappa);
    expect(r.noiseFloor.accuracy).toBeCloseTo(noiseFloor(r.perRepeat.accuracy!)!, 12);
    expect(r.noiseFloor.accuracy).toBeGreaterThan(0);
    // Every repeat is a call, and is paid for.
    expect(thrice.cost.calls).toBe(3 * once.cost.calls);
    expect(thrice.cost.totalUsd).toBeGreaterThan(2.5 * once.cost.totalUsd);

    // labeled.csv: each repeat's label; the item's label is their majority; repeat 1 is the plain run's.
    const plain = await labeled(join(runs, 'once'));
    const three = await labeled(join(runs, 'thrice'));
    expect(three.header.slice(7, 12)).toEqual(['label', 'label.by', 'label.r1', 'label.r2', 'label.r3']);
    expect(plain.header).not.toContain('label.r1');
    let flips = 0;
    let ties = 0;
    three.rows.forEach((row, i) => {
      const votes = [row['label.r1']!, row['label.r2']!, row['label.r3']!];
      expect(row['label.r1']).toBe(plain.rows[i]!.label);
      const counts = new Map<string, number>();
      for (const v of votes) counts.set(v, (counts.get(v) ?? 0) + 1);
      const top = Math.max(...counts.values());
      if (top === 1) {
        ties += 1;
        expect(row.label).toBe(votes[0]);
      } else expect(counts.get(row.label!)).toBe(top);
      if (counts.size > 1) flips += 1;
    });
    expect(r.flipRate).toBeCloseTo(flips / 48, 12);
    expect(r.ties).toBe(ties);

    // The comparison with the previous run holds each delta against the noise floor.
    const delta = (thrice.comparison as { scores: Record<string, { deltas: Record<string, unknown> }> })
      .scores.label!.deltas.accuracy as { delta: number; noiseFloor: number; withinNoise: boolean };
    expect(delta.noiseFloor).toBe(r.noiseFloor.accuracy);
    expect(delta.withinNoise).toBe(Math.abs(delta.delta) <= delta.noiseFloor);
    const text = await readFile(join(runs, 'thrice', 'report.txt'), 'utf8');
    expect(text).toContain("Krippendorff's alpha");
    expect(text).toMatch(/label accuracy +Δ [+-]\d\.\d{3} .* (within|beyond) noise ±\d\.\d{3}/);
  });

  it('a sweep gate holds the paired delta against the noise floor', async () => {
    const dir = await tempDir('assay-repeats-sweep-');
    const base = JSON.parse(await readFile(join(REPO, 'examples', 'reply-tone-prompts.suite.json'), 'utf8'));
    const suite = {
      ...base,
      $schema: undefined,
      name: 'tone-noise',
      dataset: { ...base.dataset, path: join(REPO, 'examples', base.dataset.path) },
      run: { repeats: 3 },
      gate: { conditions: ['delta accuracy > noise', 'delta kappa > -noise'] },
    };
    await cp(join(REPO, 'examples', 'prompts'), join(dir, 'prompts'), { recursive: true });
    await writeFile(join(dir, 'tone-noise.suite.json'), JSON.stringify(suite));
    const { stdout } = await assayCli(
      ['run', join(dir, 'tone-noise.suite.json'), '--simulate', '--runs', join(dir, 'runs'), '--no-progress'],
      dir,
    );
    // The simulator ignores the prompt's wording: the two versions tie, within the noise.
    // No item differs: Δ 0 with McNemar's p = 1, and Newcombe's interval around it (not [0, 0]).
    expect(stdout).toMatch(/accuracy ±0\.000 \[-0\.\d{3}, 0\.\d{3}\] p=1\.000 within noise ±0\.\d{3}/);
    expect(stdout).toMatch(
      /FAIL {2}delta accuracy > noise: delta accuracy 0 vs noise floor 0\.\d+ fails > 0\.\d+/,
    );
    expect(stdout).toMatch(
      /pass {2}delta kappa > -noise: delta kappa 0 vs noise floor −0\.\d+ meets > -0\.\d+/,
    );
  });

  it('assay estimate counts every repeat', async () => {
    const dir = await tempDir('assay-repeats-estimate-');
    const base = JSON.parse(await readFile(join(REPO, 'examples', 'reply-tone.suite.json'), 'utf8'));
    const suite = {
      ...base,
      $schema: undefined,
      dataset: { ...base.dataset, path: join(REPO, 'examples', base.dataset.path) },
    };
    await cp(join(REPO, 'examples', 'prompts'), join(dir, 'prompts'), { recursive: true });
    const estimate = async (run: Record<string, unknown>) => {
      const path = join(dir, `${Object.keys(run).length}.suite.json`);
      await writeFile(path, JSON.stringify({ ...suite, run }));
      const { stdout } = await assayCli(['estimate', path, '--json'], dir);
      return JSON.parse(stdout).backends[0] as { calls: { min: number }; inputTokens: { min: number } };
    };
    const once = await estimate({});
    const thrice = await estimate({ repeats: 3 });
    expect(once.calls.min).toBe(48);
    expect(thrice.calls.min).toBe(3 * 48);
    expect(thrice.inputTokens.min).toBe(3 * once.inputTokens.min);
  });

  it('the batch lane takes every repeat of an item in the same round and ends as the sync lane does', async () => {
    // The vendor fake answers from the prompt alone: each repeat gets the same verdict.
    const answer = (call: FakeCall): FakeReply => {
      const label = ['TP', 'FP1', 'FP2', 'FP3'][call.promptText.length % 4]!;
      return { text: JSON.stringify({ label, reason: `fake verdict ${label}` }) };
    };
    const lane = async (name: 'sync' | 'batch', onEvent?: (event: RunEvent) => void) => {
      const root = await tempDir(`assay-repeats-${name}-`);
      const outDir = join(root, 'runs', 'run');
      await runLocal({
        suitePath: join(REPO, 'examples', 'quickstart.suite.json'),
        outDir,
        runsDir: join(root, 'runs'),
        cachePath: join(root, 'cache', 'llm-cache.jsonl'),
        env: fake.env,
        sample: { n: 8, seed: 5 },
        backends: ['openai:gpt-4o-mini'],
        repeats: 3,
        lane: name,
        batchPollMs: 1,
        onEvent,
      });
      return readReport(outDir);
    };
    fake.setHandler(answer);
    const sync = await lane('sync');
    fake.reset();
    fake.setHandler(answer);
    const rounds: number[] = [];
    const batch = await lane('batch', (e) => {
      if (e.type === 'batch' && e.event.type === 'round') rounds.push(e.event.deferred);
    });
    // One round of batches holding the three samples of every item, then the round that finishes.
    expect(rounds).toEqual([8, 0]);
    expect(fake.batches.flatMap((b) => b.entries)).toHaveLength(3 * 8);
    expect(batch.cost.calls).toBe(3 * 8);
    expect(batch.scores).toEqual(sync.scores);
    expect(batch.scores.label!.reliability).toMatchObject({ repeats: 3, n: 8, flipRate: 0 });
  }, 120_000);
});
