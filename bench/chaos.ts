/**
 * Fault injection: the CLI (the OpenAI SDK) against a loopback OpenAI-compatible server that
 * answers by a seeded fault schedule — 4% 429 with retry-after, 3% 500, 3% 503, 2% connection
 * reset mid-body, 0.5% hangs past the client timeout, 2% malformed JSON, 2% answers outside the
 * verdict format, 2% `finish_reason: length`, 1.5% refusals (see chaos/server.ts) — over GEC
 * items, in three scenarios:
 * - `local`: `assay run` on N items, undisturbed;
 * - `local-killed`: `assay run` killed (SIGKILL) at 30% and 70% of the items and resumed;
 * - `cloud`: `assay cloud` (the Lambda handlers on moto_server) on M items, undisturbed.
 *
 * Prints, per scenario: items lost, items duplicated, failures without a kind, the requests
 * billed twice split by cause (paid again after receipt, lost in flight at a kill, not read;
 * see chaos/ledger.ts), what the server billed against the report's cost, what the client read
 * (billing on delivery), and the wall time. Writes the figures to bench/results/chaos-<date>.json.
 *
 * `npm run chaos -- [--items 10000] [--cloud-items 2000] [--concurrency 64] [--seed 1]
 *   [--timeout 10000] [--scenarios local,local-killed,cloud] [--out file.json] [--keep]`
 *
 * The server listens on 127.0.0.1 only, serves at most 6 requests per item and stops after
 * an hour whatever happens.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createReadStream } from 'node:fs';
import { cp, mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { readRows } from '../shared/lib/datasets/read.js';
import { type BillingSplit, splitBilling } from './chaos/ledger.js';
import {
  ANSWER_TOKEN,
  answerToken,
  type BilledAnswer,
  FAULTS,
  type FaultServer,
  startFaultServer,
} from './chaos/server.js';
import { distinctGecCsv } from './parts/data.js';

const REPO = resolve(import.meta.dirname, '..');
const SCENARIOS = ['local', 'local-killed', 'cloud'] as const;
type Scenario = (typeof SCENARIOS)[number];

const { values } = parseArgs({
  options: {
    items: { type: 'string', default: '10000' },
    'cloud-items': { type: 'string', default: '2000' },
    concurrency: { type: 'string', default: '64' },
    seed: { type: 'string', default: '1' },
    scenarios: { type: 'string', default: SCENARIOS.join(',') },
    /** The client's per-request timeout, ms (the suite's `run.timeoutMs`). */
    timeout: { type: 'string', default: '10000' },
    /** Where the figures go; default bench/results/chaos-<date>.json. */
    out: { type: 'string' },
    /** Keep the scenarios' folders (data, runs, caches) instead of deleting them. */
    keep: { type: 'boolean', default: false },
  },
});
const ITEMS = Number(values.items);
const CLOUD_ITEMS = Number(values['cloud-items']);
const CONCURRENCY = Number(values.concurrency);
const SEED = Number(values.seed);
const WANTED = values.scenarios.split(',').map((s) => s.trim());
if (!(ITEMS > 0 && CLOUD_ITEMS > 0 && CONCURRENCY > 0 && Number(values.timeout) > 0)) {
  throw new Error('--items, --cloud-items, --concurrency and --timeout must be positive numbers');
}
for (const s of WANTED) {
  if (!(SCENARIOS as readonly string[]).includes(s)) {
    throw new Error(`--scenarios: unknown scenario ${s} (known: ${SCENARIOS.join(', ')})`);
  }
}

/**
 * The client gives up on a request after this long (the suite's `run.timeoutMs`); a hang
 * outlasts it. By default 10 s, well above the answers' 150 ms at most: on a loaded machine an answer can take
 * seconds to come through, and one that comes after the timeout is billed and asked again.
 */
const CLIENT_TIMEOUT_MS = Number(values.timeout);
/** Answers take 50–150 ms (100 on average). */
const MEAN_LATENCY_MS = 100;
const KILL_AT = [0.3, 0.7];

/** Writes `items` GEC items (each its own sentence pair) and the suite `chaos` over them into `dir`. */
async function writeDataset(dir: string, items: number): Promise<void> {
  await mkdir(dir, { recursive: true });
  await distinctGecCsv(join(dir, 'data.csv'), items);
  await writeFile(
    join(dir, 'chaos.suite.json'),
    JSON.stringify({
      version: 1,
      name: 'chaos',
      task: 'gec',
      judge: 'feedback',
      method: 'baseline',
      dataset: { path: 'data.csv' },
      backends: ['openai:gpt-4o-mini'],
      run: { concurrency: CONCURRENCY, maxAttempts: 6, timeoutMs: CLIENT_TIMEOUT_MS },
    }),
  );
}

function assay(dir: string, args: string[], url: string, cacheDir: string): ChildProcess {
  return spawn(process.execPath, [join(REPO, 'bin', 'assay.mjs'), ...args], {
    cwd: dir,
    env: {
      ...process.env,
      OPENAI_API_KEY: 'chaos',
      OPENAI_BASE_URL: `${url}/v1`,
      ASSAY_CACHE_DIR: cacheDir,
      POWERTOOLS_LOG_LEVEL: 'WARN',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

function exited(child: ChildProcess): Promise<{ code: number | null; output: string }> {
  let output = '';
  const keep = (d: Buffer) => {
    output = (output + d).slice(-20_000);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  return new Promise((done) => child.on('exit', (code) => done({ code, output })));
}

interface ResultRow {
  itemId: string;
  status: string;
  kind?: string;
}

async function localResults(outDir: string): Promise<ResultRow[]> {
  const text = await readFile(join(outDir, 'results.jsonl'), 'utf8').catch(() => '');
  return text
    .split('\n')
    .filter((l) => l.endsWith('}'))
    .map((l) => JSON.parse(l) as { itemId: string; status: string; failure?: { kind?: string } })
    .map((r) => ({ itemId: r.itemId, status: r.status, kind: r.failure?.kind }));
}

/** Results logged so far (lines), without parsing them: the poll stays cheap at 10,000 items. */
async function resultCount(outDir: string): Promise<number> {
  const text = await readFile(join(outDir, 'results.jsonl'), 'utf8').catch(() => '');
  let n = 0;
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) n += 1;
  return n;
}

/** The cloud's results, from the report's labeled.csv (one row per result). */
async function cloudResults(outDir: string): Promise<ResultRow[]> {
  const rows: ResultRow[] = [];
  for await (const row of readRows(createReadStream(join(outDir, 'labeled.csv')), 'csv')) {
    if (!row.record) throw new Error(`${outDir}/labeled.csv: a row that is not a record`);
    const { idx, status, failure } = row.record;
    rows.push({ itemId: idx!, status: status!, kind: failure || undefined });
  }
  return rows;
}

/** The answer tokens the client's files hold (its LLM cache, its results, its report). */
async function storedTokens(paths: string[]): Promise<Set<string>> {
  const tokens = new Set<string>();
  for (const path of paths) {
    const text = await readFile(path, 'utf8').catch(() => '');
    for (const match of text.matchAll(ANSWER_TOKEN)) tokens.add(match[0]);
  }
  return tokens;
}

async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true }).catch(() => []);
  return entries.filter((e) => e.isFile()).map((e) => join(e.parentPath, e.name));
}

interface Row extends Omit<BillingSplit, 'billedNeverStored'> {
  /** Null for the cloud: its LLM cache is in moto, gone once `assay cloud` ends. */
  billedNeverStored: number | null;
  scenario: Scenario;
  items: number;
  resultsAtKills: number[];
  /** Wall time of each client process (killed ones, then the one that finished), s. */
  phaseSeconds: number[];
  lost: number;
  duplicated: number;
  failed: number;
  failuresWithoutKind: number;
  requests: number;
  faults: Record<string, number>;
  reportUsd: number;
  /** The report's cost against billed − lost in flight − not received. */
  reportMatchesBilled: boolean;
  wallSeconds: number;
  faultFreeBoundSeconds: number;
  wallVsBound: number;
  /** The first requests paid again after receipt, with the answers billed for them. */
  paidAgain: { token: string; answers: Omit<BilledAnswer, 'digest'>[] }[];
}

/** After a client process ends: every connection closed, so every answer's delivery is known. */
async function settle(server: FaultServer): Promise<void> {
  if (!(await server.connectionsClosed(10_000)))
    process.stderr.write('chaos: client connections still open\n');
}

async function runLocal(
  name: Scenario,
  dir: string,
  server: FaultServer,
  killAt: number[],
): Promise<Outcome> {
  const outDir = join(dir, name);
  const cacheDir = join(dir, `${name}-cache`);
  const args = ['run', join(dir, 'chaos.suite.json'), '--out', outDir, '--no-progress'];
  const stored: Set<string>[] = [];
  const snapshot = () => storedTokens([join(cacheDir, 'llm-cache.jsonl'), join(outDir, 'results.jsonl')]);
  const kills: number[] = [];
  const phaseSeconds: number[] = [];
  let phaseStarted = performance.now();
  const phaseEnded = () => {
    phaseSeconds.push(Number(((performance.now() - phaseStarted) / 1000).toFixed(1)));
    phaseStarted = performance.now();
  };
  for (const [phase, share] of killAt.entries()) {
    server.setPhase(phase);
    const child = assay(dir, args, server.url, cacheDir);
    const done = exited(child);
    for (;;) {
      if ((await resultCount(outDir)) >= share * ITEMS) break;
      if (child.exitCode !== null) throw new Error(`${name}: the run ended before ${share * 100}%`);
      await new Promise((r) => setTimeout(r, 100));
    }
    child.kill('SIGKILL');
    await done;
    phaseEnded();
    await settle(server);
    kills.push((await localResults(outDir)).length);
    stored.push(await snapshot());
    if (values.keep) {
      // What the killed process left, for looking into a request paid again.
      const copy = join(dir, `${name}-after-${phase}`);
      await mkdir(copy, { recursive: true });
      await cp(join(cacheDir, 'llm-cache.jsonl'), join(copy, 'llm-cache.jsonl')).catch(() => undefined);
      await cp(join(outDir, 'results.jsonl'), join(copy, 'results.jsonl')).catch(() => undefined);
    }
  }
  server.setPhase(killAt.length);
  const last = await exited(assay(dir, args, server.url, cacheDir));
  if (last.code !== 0) throw new Error(`${name}: assay run failed:\n${last.output}`);
  phaseEnded();
  await settle(server);
  stored.push(await snapshot());
  const report = JSON.parse(await readFile(join(outDir, 'report.json'), 'utf8'));
  return {
    results: await localResults(outDir),
    stored,
    kills,
    reportUsd: report.cost.totalUsd as number,
    phaseSeconds,
  };
}

interface Outcome {
  results: ResultRow[];
  /** The answer tokens in the client's files after each process (see chaos/ledger.ts). */
  stored: Set<string>[];
  /** Results recorded at each kill. */
  kills: number[];
  reportUsd: number;
  /** Wall time of each client process, s. */
  phaseSeconds: number[];
}

async function runCloud(dir: string, server: FaultServer): Promise<Outcome> {
  const started = performance.now();
  const outDir = join(dir, 'cloud');
  const last = await exited(
    assay(
      dir,
      ['cloud', join(dir, 'chaos.suite.json'), '--out', outDir],
      server.url,
      join(dir, 'cloud-cache'),
    ),
  );
  if (last.code !== 0) throw new Error(`cloud: assay cloud failed:\n${last.output}`);
  await settle(server);
  // The cloud's LLM cache lives in moto, gone with it: what it kept is in the report's files.
  const stored = [await storedTokens(await filesUnder(outDir))];
  const phaseSeconds = [Number(((performance.now() - started) / 1000).toFixed(1))];
  const report = JSON.parse(await readFile(join(outDir, 'report.json'), 'utf8'));
  return {
    results: await cloudResults(outDir),
    stored,
    kills: [],
    reportUsd: report.cost.totalUsd as number,
    phaseSeconds,
  };
}

async function scenario(name: Scenario, root: string): Promise<Row> {
  const items = name === 'cloud' ? CLOUD_ITEMS : ITEMS;
  const dir = join(root, `${items}`);
  if (!(await filesUnder(dir)).some((f) => f.endsWith('data.csv'))) await writeDataset(dir, items);
  const server = await startFaultServer({ seed: SEED, maxRequests: items * 6, maxLifetimeMs: 3_600_000 });
  const started = performance.now();
  let outcome: Outcome;
  try {
    outcome =
      name === 'cloud'
        ? await runCloud(dir, server)
        : await runLocal(name, dir, server, name === 'local-killed' ? KILL_AT : []);
  } finally {
    await server.close();
  }
  const wallMs = performance.now() - started;
  const { results } = outcome;
  const ids = new Map<string, number>();
  for (const r of results) ids.set(r.itemId, (ids.get(r.itemId) ?? 0) + 1);
  const split = splitBilling(server.ledger.answers, outcome.stored);
  const boundMs = (items / CONCURRENCY) * MEAN_LATENCY_MS;
  const round = (usd: number) => Number(usd.toFixed(6));
  return {
    scenario: name,
    items,
    resultsAtKills: outcome.kills,
    phaseSeconds: outcome.phaseSeconds,
    lost: items - ids.size,
    duplicated: [...ids.values()].filter((n) => n > 1).length,
    failed: results.filter((r) => r.status === 'failed').length,
    failuresWithoutKind: results.filter((r) => r.status === 'failed' && !r.kind).length,
    requests: server.ledger.requests,
    faults: server.ledger.faults,
    ...split,
    billedNeverStored: name === 'cloud' ? null : split.billedNeverStored,
    billedUsd: round(split.billedUsd),
    deliveredUsd: round(split.deliveredUsd),
    lostInFlightUsd: round(split.lostInFlightUsd),
    notReceivedUsd: round(split.notReceivedUsd),
    expectedReportUsd: round(split.expectedReportUsd),
    reportUsd: round(outcome.reportUsd),
    reportMatchesBilled: Math.abs(outcome.reportUsd - split.expectedReportUsd) < 1e-9,
    wallSeconds: Number((wallMs / 1000).toFixed(1)),
    faultFreeBoundSeconds: Number((boundMs / 1000).toFixed(1)),
    wallVsBound: Number((wallMs / boundMs).toFixed(2)),
    paidAgain: split.paidAgainDigests.slice(0, 10).map((digest) => ({
      token: answerToken(digest),
      answers: server.ledger.answers.filter((a) => a.digest === digest).map(({ digest: _, ...a }) => a),
    })),
  };
}

function describe(row: Row): string {
  const kills = row.resultsAtKills.length;
  return [
    `${row.scenario}: ${row.items} items, lost ${row.lost}, duplicated ${row.duplicated}, ` +
      `failed ${row.failed} (without a kind ${row.failuresWithoutKind}), requests ${row.requests}`,
    `  billed ${row.billedCalls} answers $${row.billedUsd}; requests billed twice ${row.billedTwice}: ` +
      `paid again after receipt ${row.paidAgainAfterReceipt}, ` +
      `lost in flight at the kills ${row.lostInFlightAtKills} (bound ${kills} × ${CONCURRENCY} = ${kills * CONCURRENCY}; ` +
      `${row.lostInFlightRead} of them read by the runtime, not yet stored), ` +
      `not received ${row.notReceived} (the client's timeout fired first); ` +
      `billed but never stored ${row.billedNeverStored ?? 'not measured (the cache is in moto)'}`,
    `  report $${row.reportUsd} vs billed − lost in flight − not received $${row.expectedReportUsd} ` +
      `(${row.reportMatchesBilled ? 'equal' : 'DIFFERENT'}); read by the client ${row.deliveredCalls} answers ` +
      `$${row.deliveredUsd} (unknown ${row.deliveryUnknown}; seen read though not received ${row.notReceivedRead})`,
    `  wall ${row.wallSeconds} s (client processes ${row.phaseSeconds.join(' + ')} s) vs fault-free bound ` +
      `${row.faultFreeBoundSeconds} s (${row.wallVsBound}x)`,
  ].join('\n');
}

const root = join(tmpdir(), `assay-chaos-${process.pid}`);
await mkdir(root, { recursive: true });
try {
  const rows: Row[] = [];
  for (const name of SCENARIOS.filter((s) => WANTED.includes(s))) {
    const row = await scenario(name, root);
    rows.push(row);
    process.stdout.write(`${describe(row)}\n`);
    for (const { token, answers } of row.paidAgain) {
      process.stdout.write(`  paid again after receipt: ${token} ${JSON.stringify(answers)}\n`);
    }
  }
  const out = resolve(
    values.out ?? join(REPO, 'bench', 'results', `chaos-${new Date().toISOString().slice(0, 10)}.json`),
  );
  // The day's file keeps the latest row of each scenario: scenarios can be run one at a time.
  const settings = { seed: SEED, concurrency: CONCURRENCY, clientTimeoutMs: CLIENT_TIMEOUT_MS };
  const earlier = await readFile(out, 'utf8')
    .then((text) => (JSON.parse(text) as { rows?: (Partial<Row> & typeof settings)[] }).rows ?? [])
    .catch(() => []);
  const merged = [
    ...earlier.filter(
      (r) => (SCENARIOS as readonly unknown[]).includes(r.scenario) && !WANTED.includes(r.scenario!),
    ),
    ...rows.map((row) => ({ ...settings, ...row })),
  ].sort((a, b) => SCENARIOS.indexOf(a.scenario!) - SCENARIOS.indexOf(b.scenario!));
  await writeFile(
    out,
    `${JSON.stringify({ killAt: KILL_AT, faults: Object.fromEntries(FAULTS), rows: merged }, null, 2)}\n`,
  );
  process.stdout.write(`written to ${out}\n`);
} finally {
  if (values.keep) process.stdout.write(`kept ${root}\n`);
  else await rm(root, { recursive: true, force: true });
}
