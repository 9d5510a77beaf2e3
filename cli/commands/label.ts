/**
 * `assay label SUITE`: from the suite's latest run (or `--run DIR`), choose the items without
 * gold whose label would narrow the prediction-powered estimate the most, and write label.html:
 * an offline page where a person labels them with the keyboard and exports `id,label,p` for
 * `dataset.goldFile`.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join, relative, resolve } from 'node:path';
import { InvalidArgumentError } from 'commander';
import { LocalRunHistory } from '../../shared/adapters/local/local-run-history.js';
import { LocalRunStore } from '../../shared/adapters/local/local-run-store.js';
import { visible } from '../../shared/lib/format.js';
import { DEFAULT_FLOOR } from '../../shared/lib/metrics/label-selection.js';
import type { ItemResult, RunRecord } from '../../shared/model/model.js';
import { isSweep } from '../../shared/model/variants.js';
import { validateSuite } from '../../shared/registry/suite.js';
import { renderPage } from '../../shared/reports/html/render.js';
import { planLabels } from '../../shared/reports/label-page.js';
import { loadSuiteFile } from '../local-run.js';

export interface LabelFlags {
  n: number;
  run?: string;
  runs: string;
  out?: string;
  seed: number;
  floor?: number;
}

/** The run folder's record and results, or a clear refusal. */
async function readRunFolder(dir: string): Promise<{ run: RunRecord; results: ItemResult[] }> {
  const text = await readFile(join(dir, 'run.json'), 'utf8').catch(() => undefined);
  if (text === undefined) throw new Error(`not a run folder: ${dir} (no run.json)`);
  let runId: unknown;
  try {
    runId = (JSON.parse(text) as { runId?: unknown }).runId;
  } catch {
    // reported below
  }
  if (typeof runId !== 'string') throw new Error(`not a run folder: ${dir} (run.json has no runId)`);
  const store = new LocalRunStore(dir, { checkSuite: validateSuite });
  const run = await store.getRun(runId);
  if (!run) throw new Error(`not a run folder: ${dir} (run ${runId} cannot be read)`);
  const results: ItemResult[] = [];
  for await (const result of store.results(runId)) results.push(result);
  return { run, results };
}

/** The folder of the suite's newest finished run under `runsDir`. */
async function latestRunDir(suiteName: string, runsDir: string): Promise<string> {
  const runs = await new LocalRunHistory(resolve(runsDir), validateSuite).runs();
  const mine = runs.filter(({ run }) => run.suiteName === suiteName);
  const done = mine.find(({ run }) => run.status === 'done');
  if (done) return done.dir;
  throw new Error(
    mine.length > 0
      ? `suite ${suiteName} has no finished run in ${runsDir}/ (its latest, ${mine[0]!.run.runId}, is ${mine[0]!.run.status}): finish it with assay run, or name a run folder with --run`
      : `suite ${suiteName} has no run in ${runsDir}/: run it first (assay run), or name its run folder with --run`,
  );
}

export async function labelCommand(suitePath: string, flags: LabelFlags): Promise<void> {
  const floor = flags.floor ?? DEFAULT_FLOOR;
  if (!(floor > 0 && floor <= 1)) throw new InvalidArgumentError('--floor must be a share in (0, 1]');
  const suite = await loadSuiteFile(suitePath);
  if (isSweep(suite) && flags.run === undefined) {
    throw new Error(
      `${suitePath} is a sweep: name the run folder of the variant to label with --run (the sweep's runs are in its runs folder)`,
    );
  }
  const dir = flags.run ?? (await latestRunDir(suite.name, flags.runs));
  const { run, results } = await readRunFolder(dir);
  if (!isSweep(suite) && run.suiteName !== suite.name) {
    throw new Error(`the run in ${dir} is of suite ${run.suiteName}, not of ${suite.name} (${suitePath})`);
  }
  const plan = planLabels(run, results, { n: flags.n, seed: flags.seed, floor });
  const out = flags.out ?? join(dir, 'label.html');
  await writeFile(
    out,
    renderPage(`Assay labels — ${run.suiteName} (${run.runId})`, { kind: 'label', label: plan.page }),
  );
  const { page } = plan;
  const ps = page.items.map((i) => i.p);
  const lines = [
    `${run.suiteName} (${run.runId}): ${page.selection.candidates} items without gold (${plan.labelled} with gold, ${plan.noVerdict} without a verdict of the judge)`,
    `chose ${page.items.length} to label (seed ${flags.seed}), p from ${Math.min(...ps).toFixed(4)} to ${Math.max(...ps).toFixed(4)}`,
    page.selection.note,
    `wrote ${relative(process.cwd(), resolve(out)) || out}: open it in a browser, label with the keys it shows, export the CSV, then point the suite's dataset.goldFile at it and run again`,
  ];
  process.stdout.write(`${visible(lines.join('\n'))}\n`);
}
