import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import type { z } from 'zod';
import type { gecSuiteSchema } from '../shared/families/gec/suite.js';
import { type Suite, validateSuite } from '../shared/registry/suite.js';

export const REPO = resolve(import.meta.dirname, '..');
/** The example data that ships with the repository (with its attribution). */
export const EXAMPLE_DATA = resolve(REPO, 'examples', 'data');
export const AQUA_FILES = {
  'gold_tp_fp3_fp2_fp1_en.csv': 256,
  'gold_en.csv': 220,
  'gold_de.csv': 240,
  'gold_ua.csv': 252,
} as const;

export function tempDir(prefix = 'assay-test-'): Promise<string> {
  return mkdtemp(join(tmpdir(), prefix));
}

export async function* chunksOf(text: string, size = 7): AsyncGenerator<Uint8Array> {
  const bytes = new TextEncoder().encode(text);
  for (let i = 0; i < bytes.length; i += size) yield bytes.slice(i, i + size);
}

type GecSuiteInput = z.input<typeof gecSuiteSchema>;

/** A suite as a user writes it (the JSON uploaded or saved): GEC feedback/baseline on the simulator. */
export function suiteInput(overrides: Partial<GecSuiteInput> = {}): GecSuiteInput {
  return {
    version: 1,
    name: 'test-suite',
    dataset: { path: 'data.csv' },
    task: 'gec',
    judge: 'feedback',
    method: 'baseline',
    backends: ['sim:gold'],
    ...overrides,
  };
}

/** The same, validated, as the code sees it. */
export function suite(overrides: Record<string, unknown> = {}): Suite {
  return validateSuite({ ...suiteInput(), ...overrides }, 'test suite');
}

/** Takes a copy of process.env now; the returned function puts it back exactly. */
export function snapshotEnv(): () => void {
  const saved = { ...process.env };
  return () => {
    for (const name of Object.keys(process.env)) if (!(name in saved)) delete process.env[name];
    Object.assign(process.env, saved);
  };
}

const noKeys = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/_API_KEY$/.test(k)));

/** The CLI as a user runs it, from the repository, with no API key and its LLM cache in `dir`. */
export function assayCli(
  args: string[],
  dir: string,
  env: NodeJS.ProcessEnv = {},
): Promise<{ stdout: string; stderr: string }> {
  return promisify(execFile)(process.execPath, [join(REPO, 'bin', 'assay.mjs'), ...args], {
    cwd: REPO,
    env: { ...noKeys, ASSAY_CACHE_DIR: join(dir, 'cache'), ...env },
  });
}

/** The encoder half of a hand-made TaskContext, for families that never embed or run NLI. */
export const NO_ENCODERS = {
  embed: async (): Promise<number[][]> => {
    throw new Error('this test runs no embedder');
  },
  contradiction: async (): Promise<number[]> => {
    throw new Error('this test runs no NLI model');
  },
};

/** The environment of a user's shell: no npm_* settings inherited from `npm test`, no API keys. */
const userEnv = Object.fromEntries(
  Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k) && !/_API_KEY$/.test(k)),
);

/**
 * Runs a command in `cwd` as a user's shell would (see `userEnv`, with its own LLM cache there),
 * and returns its exit code and output whether it failed or not.
 */
export async function runAsUser(
  command: string,
  args: string[],
  cwd: string,
): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(command, args, {
      cwd,
      env: { ...userEnv, ASSAY_CACHE_DIR: join(cwd, '.assay-cache') },
      maxBuffer: 16 * 1024 * 1024,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

/** The `assay` binary started in the repository with `env` added, for a test that kills it midway. */
export function spawnAssay(args: string[], env: NodeJS.ProcessEnv): ChildProcess {
  return spawn(process.execPath, [join(REPO, 'bin', 'assay.mjs'), ...args], {
    cwd: REPO,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/** How a started process ended: its exit code (null when killed) and its stdout and stderr together. */
export function exited(child: ChildProcess): Promise<{ code: number | null; output: string }> {
  let output = '';
  child.stdout?.on('data', (d) => {
    output += d;
  });
  child.stderr?.on('data', (d) => {
    output += d;
  });
  return new Promise((resolve) => child.on('exit', (code) => resolve({ code, output })));
}
