import { cp, mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { contentHash, PROMPT_PREFIX } from '../shared/lib/prompts/prompts.js';
import { InputError } from '../shared/model/errors.js';
import type { ItemResult } from '../shared/model/model.js';
import type { Report } from '../shared/model/report.js';
import { taskFor } from '../shared/registry/registry.js';
import { type Suite, variantSuites } from '../shared/registry/suite.js';
import {
  chooseDemonstrations,
  EXAMPLES_COLUMN,
  heldOutDecision,
  type JudgedItem,
  lineDiff,
  renderDemonstrations,
  splitHeldOut,
  stratumOf,
  withExamplesSection,
} from '../shared/sweeps/tune.js';
import { renderTuneText, type TuneCandidate, type TuneReport } from '../shared/sweeps/tune-report.js';
import { whyNotWritten } from '../shared/use-cases/aggregate-run.js';
import { prepareRun } from '../shared/use-cases/prepare-run.js';
import { rowParser } from '../shared/use-cases/start-run.js';
import { applySettings, datasetFileOf, loadSuiteFile, promptStoreFor, runSuite } from './local-run.js';
import { runSweep } from './sweep.js';

export interface TuneOptions {
  /** Where the tuning files go (default `<suite dir>/tune`). */
  outDir?: string;
  seed: number;
  /** Share of the labelled items held out (default 0.3). */
  heldOut: number;
  /** Errors of the original judge shown as demonstrations (more for labels they leave out). */
  demonstrations: number;
  /** Candidates carried to the held-out comparison, best on the tuning set first. */
  finalists: number;
  alpha: number;
  simulate?: boolean;
  concurrency?: number;
  pricesPath?: string;
  env?: NodeJS.ProcessEnv;
  onStep?: (line: string) => void;
}

/** A labelled item with its dataset record, as the tuning files copy it. */
interface Labelled {
  id: string;
  gold: string;
  input: Record<string, string>;
  record: Record<string, string>;
}

/** A variant as a suite declares it (raw JSON). */
type RawVariant = Record<string, unknown> & { name: string };

/** Dataset keys that only say how the original file is read: the copies are JSONL with the gold in them. */
const FILE_KEYS = ['format', 'compression', 'delimiter', 'header', 'encoding', 'goldFile'];

/**
 * `assay tune` in the local shell: splits the suite's labelled items into a tuning set and a
 * held-out set, scores the original judge and the candidates (the suite's own variants, then a
 * prompt with demonstrations chosen from the tuning set) on the tuning set as sweeps, and
 * scores the best of them and the original judge once on the held-out set. Each sweep runs over
 * a copy of the dataset holding only its items (`data/*.jsonl` in the output folder), so no
 * held-out row is ever read by a run of the search.
 */
export async function tuneSuiteFile(
  suitePath: string,
  options: TuneOptions,
): Promise<{ outDir: string; report: TuneReport }> {
  const path = resolve(suitePath);
  const suiteDir = dirname(path);
  const suite = await loadSuiteFile(path);
  if (suite.task !== 'judge')
    throw new InputError(
      `assay tune tunes a judge: suite ${suite.name} has task "${suite.task}", not "judge"`,
    );
  const judge = (suite as Suite & { judge: { pairwise?: unknown; labels?: string[]; threshold?: number } })
    .judge;
  if (judge.pairwise)
    throw new InputError('assay tune does not tune a pairwise judge yet: its demonstrations would be pairs');
  const raw = JSON.parse(await readFile(path, 'utf8')) as Record<string, unknown>;
  const outDir = resolve(options.outDir ?? join(suiteDir, 'tune'));
  const step = options.onStep ?? (() => {});

  const declared = (raw.variants as RawVariant[] | undefined) ?? [];
  if (raw.matrix !== undefined)
    throw new InputError('assay tune reads the variants a suite names; a matrix is not expanded yet');
  const variants: RawVariant[] = declared.length > 0 ? declared : [{ name: 'original' }];
  const baselineName = (raw.baseline as string | undefined) ?? variants[0]!.name;
  const baselineVariant = variants.find((v) => v.name === baselineName);
  if (!baselineVariant) throw new InputError(`baseline ${baselineName} is not one of the variants`);
  const baselineSuite =
    declared.length > 0 ? variantSuites(suite).find((v) => v.variant.name === baselineName)!.suite : suite;

  // The labelled items, read as a run reads them.
  const source = await datasetFileOf(suite, suiteDir);
  const run = await prepareRun({
    suite: applySettings(baselineSuite, { simulate: options.simulate }),
    prompts: promptStoreFor(suiteDir),
    datasetKey: source.key,
    datasetVersion: source.version,
    reportPrefix: '',
  });
  const parse = rowParser(run);
  const slices = suite.slices ?? [];
  const labelled: Labelled[] = [];
  const strata: { id: string; stratum: string }[] = [];
  // Every row, labelled or not, for the suite that runs a tuned few-shot prompt on the whole dataset.
  const everyRow: { record: Record<string, string>; id?: string }[] = [];
  for await (const row of source.rows()) {
    const parsed = parse(row);
    if (row.error === undefined) {
      if (row.record[EXAMPLES_COLUMN] !== undefined)
        throw new InputError(`the dataset has a column ${EXAMPLES_COLUMN}, the column tune adds`);
      everyRow.push({ record: row.record, ...('item' in parsed ? { id: parsed.item.id } : {}) });
    }
    if (!('item' in parsed) || parsed.item.gold === undefined || row.error !== undefined) continue;
    const { id, gold, input } = parsed.item;
    if (input[EXAMPLES_COLUMN] !== undefined)
      throw new InputError(`the prompt already reads {${EXAMPLES_COLUMN}}, the column tune adds`);
    labelled.push({ id, gold, input, record: row.record });
    strata.push({ id, stratum: stratumOf(gold, row.record, slices) });
  }
  if (labelled.length < 10)
    throw new InputError(
      `assay tune needs at least 10 labelled items; suite ${suite.name} has ${labelled.length}`,
    );
  const split = splitHeldOut(strata, { share: options.heldOut, seed: options.seed });
  const byId = new Map(labelled.map((item) => [item.id, item]));
  step(
    `${labelled.length} labelled items: ${split.tuning.length} to tune on, ${split.heldOut.length} held out (${split.heldOutDigest})`,
  );

  // The output folder is the suite folder of every sweep: the suite's prompts copied beside the data.
  await mkdir(join(outDir, 'data'), { recursive: true });
  const prompts = join(suiteDir, 'prompts');
  if (await isFolder(prompts)) await cp(prompts, join(outDir, 'prompts'), { recursive: true });
  const idColumn = typeof suite.dataset.columns.id === 'string' ? suite.dataset.columns.id : 'id';
  const writeData = async (name: string, ids: readonly string[], examples?: string) => {
    const lines = ids.map((id) => {
      const item = byId.get(id)!;
      const record = {
        ...item.record,
        [idColumn]: id,
        ...(examples === undefined ? {} : { [EXAMPLES_COLUMN]: examples }),
      };
      return `${JSON.stringify(record)}\n`;
    });
    await writeFile(join(outDir, 'data', name), lines.join(''));
    return `data/${name}`;
  };
  const sweepSuite = async (name: string, dataPath: string, list: RawVariant[]) => {
    const { gate: _g, rankBy: _r, matrix: _m, ...rest } = raw;
    const dataset = { ...(raw.dataset as Record<string, unknown>) };
    for (const key of FILE_KEYS) delete dataset[key];
    const columns = { ...(dataset.columns as Record<string, unknown> | undefined), id: idColumn };
    const runBlock = { ...(raw.run as Record<string, unknown> | undefined) };
    delete runBlock.sample;
    const { variants: _v, baseline: _b, ...common } = rest;
    const body = {
      ...common,
      dataset: { ...dataset, path: dataPath, columns },
      run: runBlock,
      ...(list.length > 1 ? { variants: list, baseline: baselineName } : {}),
    };
    const file = join(outDir, `${name}.suite.json`);
    await writeFile(file, `${JSON.stringify(body, null, 2)}\n`);
    return loadSuiteFile(file);
  };
  // A round of one variant (the original judge, when the suite declares none) is a plain run.
  const sweep = async (name: string, dataPath: string, list: RawVariant[]) => {
    const loaded = await sweepSuite(name, dataPath, list);
    step(`${name}: ${list.map((v) => v.name).join(', ')} on ${dataPath}`);
    const settings = {
      simulate: options.simulate,
      concurrency: options.concurrency,
      pricesPath: options.pricesPath,
      env: options.env,
    };
    const source = await datasetFileOf(loaded, outDir);
    let done: { outDir: string; runs: { variant: string; outDir: string; report: Report }[] };
    if (list.length === 1) {
      const one = await runSuite(loaded, outDir, source, {
        ...settings,
        outDir: join(outDir, name, list[0]!.name),
      });
      if (one.outcome.status !== 'written') throw new Error(`${name}: ${whyNotWritten(one.outcome)}`);
      done = {
        outDir: one.outDir,
        runs: [{ variant: list[0]!.name, outDir: one.outDir, report: one.outcome.report }],
      };
    } else done = await runSweep(loaded, outDir, source, { ...settings, outDir: join(outDir, name) });
    const results = new Map<string, Map<string, ItemResult>>();
    for (const r of done.runs) results.set(r.variant, await readResults(join(r.outDir, 'results.jsonl')));
    return { done, results };
  };
  const correctOf = (result: ItemResult | undefined) => isCorrect(result, judge);
  const figures = (results: Map<string, ItemResult>, ids: readonly string[]) => {
    const correct = ids.filter((id) => correctOf(results.get(id))).length;
    const cost = [...results.values()].reduce(
      (sum, r) => sum + Object.values(r.stages ?? {}).reduce((s, st) => s + (st.costUsd ?? 0), 0),
      0,
    );
    const accuracy = ids.length === 0 ? 0 : correct / ids.length;
    // Against the original judge on the same items: what the candidates are ranked by.
    const original =
      round1Base === undefined ? correct : ids.filter((id) => correctOf(round1Base!.get(id))).length;
    const vsOriginal = ids.length === 0 ? 0 : (correct - original) / ids.length;
    return { n: ids.length, correct, accuracy, vsOriginal, costUsd: cost };
  };
  let round1Base: Map<string, ItemResult> | undefined;

  const originalPath = taskFor(baselineSuite).promptPaths(baselineSuite).judge!;
  const originalText = await readPrompt(outDir, suiteDir, originalPath);

  // Round 1: the original judge and the variants the suite declares, on the tuning set.
  const round1 = await sweep('tuning-1', await writeData('tuning-1.jsonl', split.tuning), variants);
  const baseResults = round1.results.get(baselineName)!;
  const candidates: TuneCandidate[] = [];
  const baselineFigures = figures(baseResults, split.tuning);
  round1Base = baseResults;
  for (const v of variants) {
    if (v.name === baselineName) continue;
    const own = variantSuites(suite).find((x) => x.variant.name === v.name)!.suite;
    const ownPath = taskFor(own).promptPaths(own).judge!;
    const ownText = await readPrompt(outDir, suiteDir, ownPath);
    candidates.push({
      name: v.name,
      round: 1,
      kind: 'declared variant',
      variant: v,
      prompt: { path: ownPath, hash: contentHash(ownText), diff: lineDiff(originalText, ownText) },
      tuning: figures(round1.results.get(v.name)!, split.tuning),
    });
  }

  // Round 2: demonstrations from the tuning set (the original judge's errors, then every label).
  const judged: JudgedItem[] = split.tuning.map((id) => ({
    id,
    gold: byId.get(id)!.gold,
    correct: correctOf(baseResults.get(id)),
  }));
  const demoIds = chooseDemonstrations(judged, {
    count: options.demonstrations,
    seed: options.seed,
    ...(judge.labels ? { labels: judge.labels } : {}),
  });
  const examples = renderDemonstrations(
    demoIds.map((id) => ({ input: byId.get(id)!.input, gold: byId.get(id)!.gold })),
    judge.labels ? 'label' : 'rating',
  );
  const fewshotText = withExamplesSection(originalText);
  const fewshotPath = hashedSibling(originalPath, 'fewshot', fewshotText);
  await mkdir(dirname(join(outDir, PROMPT_PREFIX, fewshotPath)), { recursive: true });
  await writeFile(join(outDir, PROMPT_PREFIX, fewshotPath), fewshotText);
  const fewshot = withJudgePrompt(baselineVariant, 'fewshot', fewshotPath, suite);
  const examplesData = await writeData('tuning-2.jsonl', split.tuning, examples);
  const round2 = await sweep('tuning-2', examplesData, [baselineVariant, fewshot]);
  candidates.push({
    name: 'fewshot',
    round: 2,
    kind: `${demoIds.length} demonstrations from the tuning set (scored on the other tuning items)`,
    variant: fewshot,
    prompt: { path: fewshotPath, hash: contentHash(fewshotText), diff: lineDiff(originalText, fewshotText) },
    demonstrations: demoIds,
    // Scored without the items it shows: a demonstration would answer its own item.
    tuning: figures(
      round2.results.get('fewshot')!,
      split.tuning.filter((id) => !demoIds.includes(id)),
    ),
  });

  // The held-out proof: the best on the tuning set, and the original judge, once.
  const ranked = [...candidates].sort((a, b) => b.tuning.vsOriginal - a.tuning.vsOriginal);
  const finalists = ranked.slice(0, Math.max(1, options.finalists));
  const heldOutData = await writeData('held-out.jsonl', split.heldOut, examples);
  const proof = await sweep('held-out', heldOutData, [baselineVariant, ...finalists.map((f) => f.variant)]);
  const heldBase = proof.results.get(baselineName)!;
  const decisions = heldOutDecision(
    finalists.map((f) => ({
      name: f.name,
      pairs: split.heldOut.map((id) => ({
        base: correctOf(heldBase.get(id)),
        candidate: correctOf(proof.results.get(f.name)!.get(id)),
      })),
    })),
    options.alpha,
  );
  const winner = decisions.find((d) => d.improved) ?? decisions[0]!;
  const improved = winner.improved;

  // The tuned prompt beside the original, only when the held-out comparison shows the improvement.
  let tunedPrompt: TuneReport['tunedPrompt'] = null;
  let tunedSuite: string | null = null;
  const winnerCandidate = candidates.find((c) => c.name === winner.name)!;
  if (improved && winnerCandidate.prompt) {
    const text =
      winner.name === 'fewshot'
        ? fewshotText
        : await readPrompt(outDir, suiteDir, winnerCandidate.prompt.path);
    const tunedPath = hashedSibling(originalPath, 'tuned', text);
    await writeFile(join(outDir, PROMPT_PREFIX, tunedPath), text);
    tunedPrompt = { path: `${PROMPT_PREFIX}${tunedPath}`, hash: contentHash(text) };
    if (winner.name === 'fewshot') {
      // The tuned prompt reads its demonstrations from a column: a copy of every row carries it.
      const lines = everyRow.map(({ record, id }) =>
        JSON.stringify({
          ...record,
          ...(id === undefined ? {} : { [idColumn]: id }),
          [EXAMPLES_COLUMN]: examples,
        }),
      );
      await writeFile(join(outDir, 'data', 'tuned.jsonl'), `${lines.join('\n')}\n`);
      const tunedVariant = withJudgePrompt(baselineVariant, 'tuned', tunedPath, suite);
      const loaded = await sweepSuite('tuned', 'data/tuned.jsonl', [tunedVariant]);
      const body = variantSuites({ ...loaded, variants: [tunedVariant] } as Suite)[0]!.suite;
      const {
        variants: _v,
        baseline: _b,
        ...plain
      } = { ...body, name: suite.name } as Record<string, unknown>;
      await writeFile(join(outDir, 'tuned.suite.json'), `${JSON.stringify(plain, null, 2)}\n`);
      tunedSuite = 'tuned.suite.json';
    }
  }
  const sweepCost = (s: typeof round1) =>
    s.done.runs.reduce((sum, r) => sum + (r.report.cost?.totalUsd ?? 0), 0);
  const report: TuneReport = {
    suite: suite.name,
    simulated: options.simulate === true,
    seed: options.seed,
    alpha: options.alpha,
    metric: judge.labels ? 'accuracy' : judge.threshold !== undefined ? 'pass agreement' : 'exact agreement',
    labelled: labelled.length,
    tuningN: split.tuning.length,
    heldOutDigest: split.heldOutDigest,
    improved,
    winner: winner.name,
    heldOut: {
      n: winner.n,
      before: winner.before,
      after: winner.after,
      delta: winner.delta,
      pValue: winner.pValue,
      adjustedP: winner.adjustedP,
    },
    finalists: decisions,
    original: {
      name: baselineName,
      prompt: { path: originalPath, hash: contentHash(originalText) },
      tuning: baselineFigures,
    },
    candidates: candidates.map(({ variant: _v, ...c }) => c),
    tunedPrompt,
    tunedSuite,
    sweeps: { tuning: [round1.done.outDir, round2.done.outDir], heldOut: proof.done.outDir },
    costUsd: sweepCost(round1) + sweepCost(round2) + sweepCost(proof),
  };
  await writeFile(join(outDir, 'report.json'), `${JSON.stringify(report, null, 2)}\n`);
  await writeFile(join(outDir, 'report.txt'), renderTuneText(report));
  return { outDir, report };
}

/** Whether a result agrees with its gold by the judge's primary scorer. A failed item does not. */
export function isCorrect(
  result: ItemResult | undefined,
  judge: { labels?: string[]; threshold?: number },
): boolean {
  if (result?.status !== 'scored' || result.gold === undefined) return false;
  const scores = result.scores as Record<string, { value?: unknown }>;
  if (judge.labels)
    return String(scores.label?.value ?? '').toLowerCase() === String(result.gold).toLowerCase();
  if (judge.threshold !== undefined) return scores.pass?.value === Number(result.gold) >= judge.threshold;
  return Number(scores.score?.value) === Number(result.gold);
}

/** A run folder's results by item id (the last result of an item, as a resumed log holds it). */
async function readResults(file: string): Promise<Map<string, ItemResult>> {
  const out = new Map<string, ItemResult>();
  for (const line of (await readFile(file, 'utf8')).split('\n')) {
    if (line.trim() === '') continue;
    const result = JSON.parse(line) as ItemResult;
    out.set(result.itemId, result);
  }
  return out;
}

async function isFolder(path: string): Promise<boolean> {
  return stat(path).then(
    (s) => s.isDirectory(),
    () => false,
  );
}

/** A prompt's text: the copy in the output folder, else the suite's or a shipped one. */
async function readPrompt(outDir: string, suiteDir: string, path: string): Promise<string> {
  for (const store of [promptStoreFor(outDir), promptStoreFor(suiteDir)]) {
    const body = await store.get(PROMPT_PREFIX + path);
    if (body) return new TextDecoder().decode(body);
  }
  throw new InputError(`prompt file not found: ${PROMPT_PREFIX}${path}`);
}

/** `tone.md` → `tone.<tag>-<first 8 hex of its content hash>.md`, in the same folder. */
function hashedSibling(path: string, tag: string, text: string): string {
  const name = basename(path);
  const dot = name.lastIndexOf('.');
  const stem = dot > 0 ? name.slice(0, dot) : name;
  const ext = dot > 0 ? name.slice(dot) : '.md';
  const folder = dirname(path);
  const file = `${stem}.${tag}-${contentHash(text).slice('sha256:'.length, 'sha256:'.length + 8)}${ext}`;
  return folder === '.' ? file : `${folder}/${file}`;
}

/** A variant like `base` with its judge reading another prompt file. */
function withJudgePrompt(base: RawVariant, name: string, promptPath: string, suite: Suite): RawVariant {
  const options = (base.options ?? {}) as Record<string, unknown>;
  const judgeBlock = {
    ...((suite as Suite & { judge: Record<string, unknown> }).judge ?? {}),
    ...((options.judge as Record<string, unknown> | undefined) ?? {}),
    prompt: promptPath,
  };
  const { description: _d, ...rest } = base;
  return {
    ...rest,
    name,
    description: `${base.name} with demonstrations chosen from the tuning set`,
    options: { ...options, judge: judgeBlock },
  };
}
