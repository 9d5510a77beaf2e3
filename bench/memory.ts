/**
 * Memory at scale (`npm run bench:memory`, not a part of `npm test`): `assay run <suite>
 * --simulate` on generated datasets of 100,000 and 1,000,000 rows, simulator latency 0, each
 * run a `node bin/assay.mjs` process of its own. Its peak RSS is read at its exit
 * (`process.resourceUsage().maxRSS`, written by a preloaded hook: exact, where sampling from
 * outside can miss a late peak). The target: the 1M run's peak within 1.2× of the 100K run's
 * (memory flat in the row count). Writes bench/results/memory.json.
 *
 *   npx tsx bench/memory.ts [--rows 100000,1000000] [--families gec,qa] [--timeout-s 1800] [--keep]
 *
 * Families: `gec` (the English GEC gold set, feedback judge, baseline method), `qa` (MMLU
 * college physics, fast path), `cleanup` (the dictation transcripts, draft and audit; about
 * 0.5 KB of input per row, so a 1M run writes a few GB). Each dataset repeats the example data
 * row after row with a fresh id: deterministic, the same every time.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { readRows } from '../shared/lib/datasets/read.js';
import { goldCsv, ROOT } from './parts/data.js';

const { values } = parseArgs({
  options: {
    rows: { type: 'string', default: '100000,1000000' },
    families: { type: 'string', default: 'gec,qa' },
    'timeout-s': { type: 'string', default: '1800' },
    keep: { type: 'boolean', default: false },
  },
});

/** The target: peak RSS of the largest run within this factor of the smallest's. */
const FLAT = 1.2;
const SIM = { noise: 0.2, latencyMs: 0, seed: 1 };
const RUN = { concurrency: 32 };

/** Writes `rows` lines to `path`, line i from `line(i)`, streamed. */
async function writeLines(
  path: string,
  header: string | undefined,
  rows: number,
  line: (i: number) => string,
) {
  const out = createWriteStream(path);
  if (header !== undefined) out.write(`${header}\n`);
  for (let i = 0; i < rows; i += 1) if (!out.write(`${line(i)}\n`)) await once(out, 'drain');
  out.end();
  await once(out, 'finish');
}

const csvField = (f: string) => `"${f.replaceAll('"', '""')}"`;

/** A suite of `family` on a generated dataset of `rows` rows in `dir`; returns the suite's path. */
async function suiteFor(family: string, dir: string, rows: number): Promise<string> {
  const name = `memory-${family}-${rows}`;
  let suite: Record<string, unknown>;
  if (family === 'gec') {
    suite = {
      dataset: { path: await goldCsv(dir, rows) },
      task: 'gec',
      judge: 'feedback',
      method: 'baseline',
    };
  } else if (family === 'qa') {
    const source: string[][] = [];
    const header = ['question', 'A', 'B', 'C', 'D', 'answer'];
    const file = join(ROOT, 'examples', 'data', 'mmlu_college_physics_test.csv');
    for await (const row of readRows(createReadStream(file), 'csv', { header })) {
      if (row.record) source.push(header.map((col) => row.record![col] ?? ''));
    }
    const path = join(dir, `qa-${rows}.csv`);
    const fields = source.map((record) => record.map(csvField).join(','));
    await writeLines(path, `id,${header.join(',')}`, rows, (i) => `q${i},${fields[i % fields.length]}`);
    suite = {
      dataset: { path, columns: { options: ['A', 'B', 'C', 'D'] } },
      task: 'qa',
      qa: { type: 'mcq' },
    };
  } else if (family === 'cleanup') {
    const text = await readFile(join(ROOT, 'examples', 'data', 'dictation.jsonl'), 'utf8');
    const source = text
      .split('\n')
      .filter((l) => l.trim())
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const path = join(dir, `cleanup-${rows}.jsonl`);
    await writeLines(path, undefined, rows, (i) =>
      JSON.stringify({ ...source[i % source.length], id: `d${i}` }),
    );
    suite = { dataset: { path }, task: 'cleanup' };
  } else throw new Error(`unknown family ${family} (gec, qa or cleanup)`);
  const path = join(dir, `${name}.suite.json`);
  await writeFile(
    path,
    JSON.stringify({ version: 1, name, ...suite, backends: ['openai:gpt-4o-mini'], run: RUN, sim: SIM }),
  );
  return path;
}

interface Measured {
  family: string;
  rows: number;
  seconds: number;
  peakRssMb: number;
  /** The report's item count and scored items, read back from report.json. */
  items?: number;
  scored?: number;
  error?: string;
}

/** `node bin/assay.mjs run <suite> --simulate` in a process of its own; its peak RSS at exit. */
async function measure(family: string, dir: string, rows: number, timeoutMs: number): Promise<Measured> {
  const suite = await suiteFor(family, dir, rows);
  const out = join(dir, `run-${family}-${rows}`);
  const rssFile = join(dir, `maxrss-${family}-${rows}.txt`);
  const started = performance.now();
  const child = spawn(
    process.execPath,
    [
      '--import',
      join(ROOT, 'bench', 'parts', 'maxrss-hook.mjs'),
      join(ROOT, 'bin', 'assay.mjs'),
      'run',
      suite,
      '--simulate',
      '--fresh',
      '--no-progress',
      '--out',
      out,
      '--runs',
      join(dir, `runs-${family}-${rows}`),
    ],
    {
      cwd: dir,
      env: { ...process.env, ASSAY_MAXRSS_FILE: rssFile, ASSAY_CACHE_DIR: join(dir, 'cache') },
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  let stderr = '';
  child.stderr.on('data', (chunk) => {
    stderr = (stderr + chunk).slice(-4000);
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const [code] = (await once(child, 'exit')) as [number | null];
  clearTimeout(timer);
  const seconds = +((performance.now() - started) / 1000).toFixed(1);
  const kb = Number((await readFile(rssFile, 'utf8').catch(() => '0')).trim());
  const base = { family, rows, seconds, peakRssMb: Math.round(kb / 1024) };
  if (code !== 0)
    return { ...base, error: `exit ${code}: ${stderr.trim().split('\n').slice(-3).join(' | ')}` };
  const report = JSON.parse(await readFile(join(out, 'report.json'), 'utf8')) as {
    counts: { items: number; scored: number };
  };
  await rm(out, { recursive: true, force: true });
  return { ...base, items: report.counts.items, scored: report.counts.scored };
}

async function main() {
  const rowCounts = values.rows.split(',').map(Number);
  const families = values.families.split(',');
  const timeoutMs = Number(values['timeout-s']) * 1000;
  // Built once here, so that no measured run spends its time or memory building dist/.
  const { ensureBuilt } = (await import(join(ROOT, 'scripts', 'build.mjs'))) as {
    ensureBuilt(o: { quiet: boolean }): Promise<void>;
  };
  await ensureBuilt({ quiet: true });
  const dir = await mkdtemp(join(tmpdir(), 'assay-memory-'));
  const runs: Measured[] = [];
  const verdicts: Record<string, unknown>[] = [];
  try {
    for (const family of families) {
      for (const rows of rowCounts) {
        const m = await measure(family, dir, rows, timeoutMs);
        runs.push(m);
        process.stdout.write(
          `${family} ${rows.toLocaleString('en')} rows: ${m.error ? `FAILED (${m.error})` : `${m.seconds} s, ${m.scored}/${m.items} scored`}, peak RSS ${m.peakRssMb} MB\n`,
        );
        // A dataset is read once: remove it before the next, larger one.
        await rm(join(dir, `gold-${rows}.csv`), { force: true });
        await rm(join(dir, `qa-${rows}.csv`), { force: true });
        await rm(join(dir, `cleanup-${rows}.jsonl`), { force: true });
      }
      const ofFamily = runs.filter((r) => r.family === family);
      const small = ofFamily[0]!;
      const large = ofFamily[ofFamily.length - 1]!;
      const ok = !small.error && !large.error && large.items === large.rows && small.peakRssMb > 0;
      const ratio = ok ? +(large.peakRssMb / small.peakRssMb).toFixed(2) : null;
      const pass = ratio !== null && ratio <= FLAT;
      verdicts.push({ family, small: small.rows, large: large.rows, ratio, target: FLAT, pass });
      process.stdout.write(
        `${family}: peak RSS ${large.rows.toLocaleString('en')} / ${small.rows.toLocaleString('en')} rows = ${ratio ?? 'n/a'} (target ≤ ${FLAT}) ${pass ? 'PASS' : 'FAIL'}\n`,
      );
    }
  } finally {
    if (!values.keep) await rm(dir, { recursive: true, force: true });
    else process.stdout.write(`kept ${dir}\n`);
  }
  // The families measured replace their earlier figures; the others' stay (one family at a time works).
  const file = join(ROOT, 'bench', 'results', 'memory.json');
  await mkdir(join(ROOT, 'bench', 'results'), { recursive: true });
  const earlier = JSON.parse(await readFile(file, 'utf8').catch(() => '{}')) as {
    families?: Record<string, unknown>;
  };
  const byFamily = { ...earlier.families };
  for (const family of families)
    byFamily[family] = {
      at: new Date().toISOString(),
      node: process.version,
      sim: SIM,
      run: RUN,
      runs: runs.filter((r) => r.family === family),
      verdict: verdicts.find((v) => v.family === family),
    };
  await writeFile(file, `${JSON.stringify({ target: FLAT, families: byFamily }, null, 2)}\n`);
  if (verdicts.some((v) => !v.pass)) process.exitCode = 1;
}

await main();
