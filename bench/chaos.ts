/**
 * Fault injection: `assay run` (the CLI, the OpenAI SDK) against a loopback OpenAI-compatible
 * server that answers by a seeded fault schedule — 4% 429 with retry-after, 3% 500, 3% 503,
 * 2% connection reset mid-body, 0.5% hangs past the client timeout, 2% malformed JSON, 2%
 * answers outside the verdict format, 2% `finish_reason: length`, 1.5% refusals — over N GEC
 * items, once undisturbed and once killed (SIGKILL) at 30% and 70% of the items and resumed.
 *
 * Prints, per scenario: items lost, items duplicated, failures without a kind, calls billed
 * twice (the same request answered in full more than once), the report's cost against what the
 * server billed, and the wall time against the fault-free bound (items / concurrency × the
 * mean answer time). Writes the figures to bench/results/chaos-<date>.json.
 *
 * `npm run chaos -- [--items 10000] [--concurrency 64] [--seed 1]`
 *
 * The server listens on 127.0.0.1 only, serves at most 6 requests per item and stops after
 * an hour whatever happens.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { readRows } from '../shared/lib/datasets/read.js';
import { costOf, EMBEDDED_PRICES } from '../shared/lib/providers/pricing.js';

const REPO = resolve(import.meta.dirname, '..');
const GOLD = join(REPO, 'examples', 'data', 'gold_tp_fp3_fp2_fp1_en.csv');

const { values } = parseArgs({
  options: {
    items: { type: 'string', default: '10000' },
    concurrency: { type: 'string', default: '64' },
    seed: { type: 'string', default: '1' },
  },
});
const ITEMS = Number(values.items);
const CONCURRENCY = Number(values.concurrency);
const SEED = Number(values.seed);
if (!(ITEMS > 0 && CONCURRENCY > 0)) throw new Error('--items and --concurrency must be positive numbers');

/** The client gives up on a request after this long (`assay run --timeout`); a hang outlasts it. */
const CLIENT_TIMEOUT_MS = 3_000;
/** Answers take 50–150 ms (100 on average). */
const MEAN_LATENCY_MS = 100;
const MAX_REQUESTS = ITEMS * 6;
const MAX_LIFETIME_MS = 3_600_000;

/** The schedule, as cumulative shares of requests. */
const FAULTS = [
  ['rate_limit', 0.04],
  ['server_500', 0.03],
  ['server_503', 0.03],
  ['reset', 0.02],
  ['hang', 0.005],
  ['malformed', 0.02],
  ['off_format', 0.02],
  ['length', 0.02],
  ['refusal', 0.015],
] as const;
type Fault = (typeof FAULTS)[number][0] | 'ok';

/** A seeded uniform draw in [0, 1) for a request: the schedule is the same in every scenario. */
function draw(...parts: (string | number)[]): number {
  return (
    createHash('sha256')
      .update(`${SEED}/${parts.join('/')}`)
      .digest()
      .readUInt32BE(0) /
    2 ** 32
  );
}

function faultOf(body: string, attempt: number): Fault {
  const u = draw('fault', body, attempt);
  let edge = 0;
  for (const [fault, share] of FAULTS) {
    edge += share;
    if (u < edge) return fault;
  }
  return 'ok';
}

interface Ledger {
  requests: number;
  /** Requests answered in full with usage (what a vendor bills), by request body digest. */
  billed: Map<string, number>;
  billedUsd: number;
  faults: Record<string, number>;
}

function startFaultServer(): Promise<{
  server: Server;
  url: string;
  ledger: Ledger;
  close(): Promise<void>;
}> {
  const ledger: Ledger = { requests: 0, billed: new Map(), billedUsd: 0, faults: {} };
  const attempts = new Map<string, number>();
  const hung = new Set<ServerResponse>();
  const server = createServer((req, res) => void handle(req, res));

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks).toString('utf8');
    if (!req.url?.endsWith('/chat/completions')) {
      res.writeHead(404).end();
      return;
    }
    ledger.requests += 1;
    if (ledger.requests > MAX_REQUESTS) {
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: 'chaos server: request budget spent' } }));
      return;
    }
    const digest = createHash('sha256').update(raw).digest('hex');
    const attempt = (attempts.get(digest) ?? 0) + 1;
    attempts.set(digest, attempt);
    const fault = faultOf(digest, attempt);
    ledger.faults[fault] = (ledger.faults[fault] ?? 0) + 1;
    const body = JSON.parse(raw) as { model: string; messages: { content: string }[] };
    await new Promise((r) => setTimeout(r, 50 + Math.floor(100 * draw('latency', digest, attempt))));
    const error = (status: number, headers: Record<string, string> = {}) => {
      res.writeHead(status, { 'content-type': 'application/json', ...headers });
      res.end(JSON.stringify({ error: { message: `chaos ${status}`, type: 'chaos' } }));
    };
    switch (fault) {
      case 'rate_limit':
        return error(429, { 'retry-after': '1' });
      case 'server_500':
        return error(500);
      case 'server_503':
        return error(503);
      case 'reset':
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('{"id":"chatcmpl-chaos","choices":[{"index":0,');
        setTimeout(() => res.destroy(), 5);
        return;
      case 'hang':
        hung.add(res);
        res.on('close', () => hung.delete(res));
        return;
      case 'malformed':
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          '{"id":"chatcmpl-chaos","choices":[{"index":0,"message":{"role":"assistant","content":"{\\"lab',
        );
        return;
    }
    const promptChars = body.messages.reduce((n, m) => n + String(m.content ?? '').length, 0);
    const label = ['TP', 'FP1', 'FP2', 'FP3'][Math.floor(4 * draw('label', digest))]!;
    const text =
      fault === 'off_format'
        ? 'The edit looks fine to me.'
        : fault === 'length'
          ? '{"label":"TP","reas'
          : fault === 'refusal'
            ? null
            : JSON.stringify({ label, reason: 'chaos model' });
    const usage = { prompt_tokens: Math.ceil(promptChars / 4), completion_tokens: 12 };
    const answer = {
      id: `chatcmpl-${digest.slice(0, 12)}`,
      object: 'chat.completion',
      created: 0,
      model: body.model,
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: text,
            ...(fault === 'refusal' ? { refusal: 'I cannot help with that.' } : {}),
          },
          finish_reason: fault === 'length' ? 'length' : 'stop',
        },
      ],
      usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens },
    };
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(answer), () => {
      ledger.billed.set(digest, (ledger.billed.get(digest) ?? 0) + 1);
      ledger.billedUsd += costOf(EMBEDDED_PRICES, 'openai:gpt-4o-mini', {
        input: usage.prompt_tokens,
        output: usage.completion_tokens,
        cached: 0,
      }).usd;
    });
  }

  return new Promise((resolveServer) => {
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      const lifetime = setTimeout(() => server.close(), MAX_LIFETIME_MS);
      lifetime.unref();
      resolveServer({
        server,
        url: `http://127.0.0.1:${port}`,
        ledger,
        close: () =>
          new Promise<void>((done) => {
            clearTimeout(lifetime);
            for (const res of hung) res.destroy();
            server.closeAllConnections();
            server.close(() => done());
          }),
      });
    });
  });
}

async function writeDataset(dir: string): Promise<void> {
  const records: Record<string, string>[] = [];
  for await (const row of readRows(createReadStream(GOLD), 'csv')) if (row.record) records.push(row.record);
  const columns = Object.keys(records[0]!);
  const quote = (f: string) => `"${f.replaceAll('"', '""')}"`;
  const lines = [columns.join(',')];
  for (let i = 0; i < ITEMS; i++) {
    const record = records[i % records.length]!;
    // Each item its own sentence pair: no two items share a request (nor a cache entry).
    const cell = (c: string) =>
      c === 'idx'
        ? String(i)
        : c === 'src' || c === 'tgt'
          ? quote(`${record[c]} [${i}]`)
          : quote(record[c] ?? '');
    lines.push(columns.map(cell).join(','));
  }
  await writeFile(join(dir, 'data.csv'), `${lines.join('\n')}\n`);
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
      run: { concurrency: CONCURRENCY, maxAttempts: 6 },
    }),
  );
}

function assay(dir: string, outDir: string, url: string): ChildProcess {
  return spawn(
    process.execPath,
    [
      join(REPO, 'bin', 'assay.mjs'),
      'run',
      join(dir, 'chaos.suite.json'),
      '--out',
      outDir,
      '--no-progress',
      '--timeout',
      String(CLIENT_TIMEOUT_MS),
    ],
    {
      cwd: dir,
      env: {
        ...process.env,
        OPENAI_API_KEY: 'chaos',
        OPENAI_BASE_URL: `${url}/v1`,
        ASSAY_CACHE_DIR: join(outDir, '..', `${outDir.split('/').at(-1)}-cache`),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
}

function exited(child: ChildProcess): Promise<{ code: number | null; output: string }> {
  let output = '';
  child.stdout?.on('data', (d) => {
    output += d;
  });
  child.stderr?.on('data', (d) => {
    output = (output + d).slice(-20_000);
  });
  return new Promise((done) => child.on('exit', (code) => done({ code, output })));
}

async function resultLines(
  outDir: string,
): Promise<{ itemId: string; status: string; failure?: { kind?: string } }[]> {
  const text = await readFile(join(outDir, 'results.jsonl'), 'utf8').catch(() => '');
  return text
    .split('\n')
    .filter((l) => l.endsWith('}'))
    .map((l) => JSON.parse(l));
}

async function scenario(name: string, dir: string, killAt: number[]) {
  const server = await startFaultServer();
  const outDir = join(dir, name);
  const started = performance.now();
  const kills: number[] = [];
  try {
    for (const share of killAt) {
      const child = assay(dir, outDir, server.url);
      const done = exited(child);
      for (;;) {
        const n = (await resultLines(outDir)).length;
        if (n >= share * ITEMS) break;
        if (child.exitCode !== null) throw new Error(`${name}: the run ended before ${share * 100}%`);
        await new Promise((r) => setTimeout(r, 100));
      }
      child.kill('SIGKILL');
      await done;
      kills.push((await resultLines(outDir)).length);
    }
    const last = await exited(assay(dir, outDir, server.url));
    if (last.code !== 0) throw new Error(`${name}: assay run failed:\n${last.output}`);
  } finally {
    await server.close();
  }
  const wallMs = performance.now() - started;
  const results = await resultLines(outDir);
  const ids = new Map<string, number>();
  for (const r of results) ids.set(r.itemId, (ids.get(r.itemId) ?? 0) + 1);
  const report = JSON.parse(await readFile(join(outDir, 'report.json'), 'utf8'));
  const boundMs = (ITEMS / CONCURRENCY) * MEAN_LATENCY_MS;
  return {
    scenario: name,
    items: ITEMS,
    resultsAtKills: kills,
    lost: ITEMS - ids.size,
    duplicated: [...ids.values()].filter((n) => n > 1).length,
    failed: results.filter((r) => r.status === 'failed').length,
    failuresWithoutKind: results.filter((r) => r.status === 'failed' && !r.failure?.kind).length,
    requests: server.ledger.requests,
    faults: server.ledger.faults,
    billedCalls: [...server.ledger.billed.values()].reduce((a, b) => a + b, 0),
    billedTwice: [...server.ledger.billed.values()].filter((n) => n > 1).length,
    billedUsd: Number(server.ledger.billedUsd.toFixed(6)),
    reportUsd: Number(report.cost.totalUsd.toFixed(6)),
    wallSeconds: Number((wallMs / 1000).toFixed(1)),
    faultFreeBoundSeconds: Number((boundMs / 1000).toFixed(1)),
    wallVsBound: Number((wallMs / boundMs).toFixed(2)),
  };
}

const dir = join(tmpdir(), `assay-chaos-${process.pid}`);
await mkdir(dir, { recursive: true });
try {
  await writeDataset(dir);
  const rows = [await scenario('undisturbed', dir, []), await scenario('killed-30-70', dir, [0.3, 0.7])];
  for (const row of rows) {
    process.stdout.write(
      `${row.scenario}: ${row.items} items, lost ${row.lost}, duplicated ${row.duplicated}, ` +
        `failed ${row.failed} (without a kind ${row.failuresWithoutKind}), requests ${row.requests}, ` +
        `billed ${row.billedCalls} (twice: ${row.billedTwice}), billed $${row.billedUsd} vs report $${row.reportUsd}, ` +
        // An answer the server sent while the client was being killed is billed and never
        // received: it is asked again on resume. At most `concurrency` per kill.
        `${row.resultsAtKills.length > 0 ? `(answers in flight at the ${row.resultsAtKills.length} kills are billed and lost), ` : ''}` +
        `wall ${row.wallSeconds} s vs fault-free bound ${row.faultFreeBoundSeconds} s (${row.wallVsBound}x)\n`,
    );
  }
  const out = join(REPO, 'bench', 'results', `chaos-${new Date().toISOString().slice(0, 10)}.json`);
  await writeFile(
    out,
    `${JSON.stringify({ seed: SEED, concurrency: CONCURRENCY, clientTimeoutMs: CLIENT_TIMEOUT_MS, faults: Object.fromEntries(FAULTS), rows }, null, 2)}\n`,
  );
  process.stdout.write(`written to ${out}\n`);
} finally {
  await rm(dir, { recursive: true, force: true });
}
