/** Runs the bench parts in child processes: each measurement gets a process (CPU, memory) of its own. */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { ROOT } from './data.js';

const part = (name: string) => join(ROOT, 'bench', 'parts', `${name}.ts`);

export interface PartOutcome<T> {
  /** The part's JSON line; undefined when it failed or ran out of time. */
  value?: T;
  /** Why there is no value. */
  error?: string;
  /** Peak RSS of the child, sampled from /proc while it runs (MB). */
  peakRssMb: number;
  ms: number;
}

/** Runs `bench/parts/<name>.ts` with `args`; kills it after `timeoutMs`. */
export async function runPart<T>(
  name: string,
  args: string[],
  {
    timeoutMs,
    nodeArgs = [],
    env = process.env,
  }: { timeoutMs: number; nodeArgs?: string[]; env?: NodeJS.ProcessEnv },
): Promise<PartOutcome<T>> {
  const started = performance.now();
  const child = spawn(process.execPath, [...nodeArgs, '--import', 'tsx', part(name), ...args], {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let peakKb = 0;
  const sampler = setInterval(async () => {
    peakKb = Math.max(peakKb, await peakRssKb(child));
  }, 500);
  const { code, stdout, stderr, timedOut } = await collected(child, timeoutMs);
  clearInterval(sampler);
  const ms = performance.now() - started;
  const line = stdout.trim().split('\n').pop() ?? '';
  if (timedOut)
    return {
      error: `did not finish within ${Math.round(timeoutMs / 1000)} s`,
      peakRssMb: Math.round(peakKb / 1024),
      ms,
    };
  if (code !== 0)
    return {
      error: `exit ${code}: ${stderr.trim().split('\n').slice(-3).join(' | ')}`,
      peakRssMb: Math.round(peakKb / 1024),
      ms,
    };
  const value = JSON.parse(line) as T;
  return { value, peakRssMb: Math.round(peakKb / 1024), ms };
}

/** What a child with piped output printed (stderr's last 4,000 characters) and how it ended. */
export interface Collected {
  code: number | null;
  stdout: string;
  stderr: string;
  /** Killed with SIGKILL after `timeoutMs`. */
  timedOut: boolean;
}

/** Collects a child's output until it exits; kills it after `timeoutMs`. */
export function collected(child: ChildProcess, timeoutMs: number): Promise<Collected> {
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk) => {
    stdout += chunk;
  });
  child.stderr?.on('data', (chunk) => {
    stderr = (stderr + chunk).slice(-4000);
  });
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    child.kill('SIGKILL');
  }, timeoutMs);
  return new Promise((done) =>
    child.on('exit', (code) => {
      clearTimeout(timer);
      done({ code, stdout, stderr, timedOut });
    }),
  );
}

/** VmHWM (the peak resident set so far) of a running child, 0 once it is gone. */
async function peakRssKb(child: ChildProcess): Promise<number> {
  const status = await readFile(`/proc/${child.pid}/status`, 'utf8').catch(() => '');
  return Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0);
}

/**
 * A run folder of `rows` results in `dir/<name>-<rows>`: a 10K-row local run (simulator, zero
 * latency) in `dir/scale-10000`, replicated. Both stay in `dir`, so a later call with the same
 * `dir` reuses them (same data, same reports).
 */
export async function replicatedRun(
  dir: string,
  rows: number,
  name: string,
  { seedTimeoutMs = 300_000 }: { seedTimeoutMs?: number } = {},
): Promise<string> {
  const seed = join(dir, 'scale-10000');
  if (!existsSync(join(seed, 'run.json'))) {
    const ran = await runPart(
      'local-scale',
      ['--mode', 'run', '--rows', '10000', '--dir', dir, '--out', seed],
      {
        timeoutMs: seedTimeoutMs,
      },
    );
    if (!ran.value) throw new Error(`the 10K-row seed run failed: ${ran.error}`);
  }
  const out = join(dir, `${name}-${rows}`);
  if (!existsSync(join(out, 'run.json'))) {
    const copied = await runPart(
      'local-scale',
      ['--mode', 'replicate', '--rows', String(rows), '--dir', dir, '--out', out, '--from', seed],
      { timeoutMs: 300_000 },
    );
    if (!copied.value) throw new Error(`replicating ${rows} results failed: ${copied.error}`);
  }
  return out;
}

export interface FakeStats {
  requests: number;
  answered: number;
  tooMany: number;
  firstAt: number;
  lastAt: number;
}

export interface Fake {
  url: string;
  /** What the fake counted; with `reset`, it then starts counting again. */
  stats(reset?: boolean): Promise<FakeStats>;
  /** The body of the first chat completion the fake was sent. */
  firstRequest(): Promise<string>;
  close(): Promise<void>;
}

/** Starts the OpenAI-compatible fake (bench/parts/fake-llm.ts) in its own process. */
export async function startFake(args: string[]): Promise<Fake> {
  const child = spawn(process.execPath, ['--import', 'tsx', part('fake-llm'), ...args], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout });
  const first = await new Promise<string>((resolve, reject) => {
    lines.once('line', resolve);
    child.once('exit', (code) => reject(new Error(`the fake LLM server exited (${code}) before listening`)));
  });
  const { port } = JSON.parse(first) as { port: number };
  const base = `http://127.0.0.1:${port}`;
  return {
    url: `${base}/v1`,
    stats: async (reset = false) =>
      (await fetch(`${base}/stats${reset ? '?reset' : ''}`)).json() as Promise<FakeStats>,
    firstRequest: async () => (await fetch(`${base}/first-request`)).text(),
    close: async () => {
      const exited = new Promise((done) => child.once('exit', done));
      child.kill();
      await exited;
    },
  };
}
