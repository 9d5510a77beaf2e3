/**
 * Linear-time matching of what suites write (`npx tsx bench/patterns.ts`): `dataset.extract`
 * on a hostile pattern, and the gate condition parser on conditions full of spaces, each
 * against a baseline of the same length measured in the same run.
 *
 * - extract: `^((?:a+)+)$` (nested repetition: JavaScript's backtracking engine doubles its
 *   time with every character of a field that almost matches) on fields of 40 and 20,000
 *   characters that almost match, vs the GSM8K answer pattern `####\s*([-0-9.,]+)\s*$` on a
 *   field of the same length. Beside it, JavaScript's own RegExp on the hostile pattern at 16,
 *   18 and 20 characters: the growth the suite's patterns no longer have.
 * - gate: `p50 latency where words(<n spaces>transcript<n spaces>) >= 150 < baseline` for n =
 *   1,000, 10,000 and 100,000, in passes over its text (one pass timed on the same text); a
 *   condition of the same length whose column is a long name is shown beside it.
 *
 * Results go to bench/results/patterns.json.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseCondition } from '../shared/lib/gate.js';
import { compilePattern } from '../shared/model/patterns.js';
import { ROOT } from './parts/data.js';
import type { Check } from './parts/table.js';

const HOSTILE = '^((?:a+)+)$';
const GSM8K = '####\\s*([-0-9.,]+)\\s*$';
const FIELD_CHARS = [40, 20_000] as const;
const NATIVE_CHARS = [16, 18, 20] as const;
const GATE_SPACES = [1_000, 10_000, 100_000] as const;
/** Most a hostile field may cost extract, as a multiple of the same-length baseline. */
const MAX_EXTRACT_RATIO = 10;
/**
 * Most a condition full of spaces may cost the parser, in passes over its text (one pass: a
 * loop testing each character for whitespace, measured on the same text). The regular
 * expression this parser replaced was cubic in the spaces: 1.0 s at 1,000, 30 s at 4,000.
 */
const MAX_GATE_PASSES = 10;

/** One JavaScript pass over `text`: each character tested for whitespace. */
function onePass(text: string): number {
  let spaces = 0;
  for (let i = 0; i < text.length; i++) if (/\s/.test(text[i]!)) spaces++;
  return spaces;
}

/** Median of `runs` timings in ms, to damp the noise of a shared machine. */
function median(runs: number, fn: () => unknown): number {
  const times: number[] = [];
  for (let i = 0; i < runs; i += 1) {
    const started = performance.now();
    fn();
    times.push(performance.now() - started);
  }
  return times.sort((a, b) => a - b)[Math.floor(runs / 2)]!;
}

export interface PatternsFigures {
  extract: { chars: number; hostileMs: number; baselineMs: number; ratio: number }[];
  /** JavaScript's RegExp on the hostile pattern: what a suite's pattern cost before. */
  nativeHostileMs: { chars: number; ms: number }[];
  gate: {
    spaces: number;
    chars: number;
    spacesMs: number;
    /** One pass over the same text: the baseline. */
    onePassMs: number;
    /** The parse in passes over the text. */
    passes: number;
    /** A condition of the same length whose column is one long name. */
    sameLengthNamedMs: number;
  }[];
  ms: number;
}

const ratioOf = (a: number, b: number) => +(a / Math.max(b, 1e-3)).toFixed(2);
const round = (ms: number) => +ms.toFixed(3);

/** A gate condition with `spaces` spaces each side of its column. */
function spacedCondition(spaces: number): string {
  const pad = ' '.repeat(spaces);
  return `p50 latency where words(${pad}transcript${pad}) >= 150 < baseline`;
}

/** A condition of `chars` characters whose column is one long name. */
function namedCondition(chars: number): string {
  const frame = 'p50 latency where words() >= 150 < baseline';
  return `p50 latency where words(${'t'.repeat(chars - frame.length)}) >= 150 < baseline`;
}

export function patternsBench(): { figures: PatternsFigures; checks: Check[] } {
  const started = performance.now();
  const hostile = compilePattern(HOSTILE);
  const gsm8k = compilePattern(GSM8K);
  const extract = FIELD_CHARS.map((chars) => {
    // Almost matches: every `a`, then a character the pattern refuses.
    const field = `${'a'.repeat(chars - 1)}!`;
    const answer = `#### ${'1'.repeat(chars - 6)}!`;
    const hostileMs = median(9, () => hostile.exec(field));
    const baselineMs = median(9, () => gsm8k.exec(answer));
    return {
      chars,
      hostileMs: round(hostileMs),
      baselineMs: round(baselineMs),
      ratio: ratioOf(hostileMs, baselineMs),
    };
  });
  const native = new RegExp(HOSTILE);
  const nativeHostileMs = NATIVE_CHARS.map((chars) => ({
    chars,
    ms: round(median(3, () => native.exec(`${'a'.repeat(chars - 1)}!`))),
  }));
  const gate = GATE_SPACES.map((spaces) => {
    const text = spacedCondition(spaces);
    const spacesMs = median(21, () => parseCondition(text));
    const passMs = median(21, () => onePass(text));
    const namedMs = median(21, () => parseCondition(namedCondition(text.length)));
    return {
      spaces,
      chars: text.length,
      spacesMs: round(spacesMs),
      onePassMs: round(passMs),
      passes: ratioOf(spacesMs, passMs),
      sameLengthNamedMs: round(namedMs),
    };
  });
  const figures: PatternsFigures = {
    extract,
    nativeHostileMs,
    gate,
    ms: Math.round(performance.now() - started),
  };
  const checks: Check[] = [
    ...extract.map((e) => ({
      figure: `dataset.extract ${HOSTILE} on a ${e.chars.toLocaleString('en-US')}-character field`,
      measured: `${e.hostileMs} ms (× ${e.ratio})`,
      bound: `GSM8K pattern, same length: ${e.baselineMs} ms; JavaScript RegExp at ${nativeHostileMs.map((n) => `${n.chars}: ${n.ms} ms`).join(', ')}`,
      target: `≤ ${MAX_EXTRACT_RATIO}× baseline`,
      pass: e.ratio <= MAX_EXTRACT_RATIO,
    })),
    ...gate.map((g) => ({
      figure: `gate condition with ${g.spaces.toLocaleString('en-US')} spaces each side of words(…)`,
      measured: `${g.spacesMs} ms (${g.passes} passes over its text)`,
      bound: `one pass over the same text: ${g.onePassMs} ms; same length, a long column name: ${g.sameLengthNamedMs} ms`,
      target: `≤ ${MAX_GATE_PASSES} passes`,
      pass: g.passes <= MAX_GATE_PASSES,
    })),
  ];
  return { figures, checks };
}

async function main() {
  const { figures, checks } = patternsBench();
  const dir = join(ROOT, 'bench', 'results');
  await mkdir(dir, { recursive: true });
  await writeFile(
    join(dir, 'patterns.json'),
    `${JSON.stringify({ at: new Date().toISOString(), node: process.version, ...figures, checks }, null, 2)}\n`,
  );
  for (const c of checks)
    process.stdout.write(`${c.pass ? 'PASS' : 'FAIL'} ${c.figure}: ${c.measured}; ${c.bound}\n`);
  process.stdout.write('written to bench/results/patterns.json\n');
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  await main();
}
