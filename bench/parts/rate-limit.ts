/**
 * Rate-limit adherence (a part of `npm run bench`, and `npx tsx bench/rate-limit-only.ts`): the
 * fake enforcing 3,000 RPM by the sliding second (429 + retry-after), 1,500 items at C = 32
 * through the local runner, three ways: the limit declared (ASSAY_LIMITS); undeclared, with the
 * fake sending OpenAI's rate-limit headers (the limiter learns the limit from them); undeclared
 * without headers (the adaptive window has only the 429s to go by). The rate is the fake's own:
 * answers between its first request and its last answer.
 */

import { runPart, startFake } from './spawn.js';
import type { Check } from './table.js';

export const RPM = 3_000;
export const RPM_ITEMS = 1_500;
const LATENCY_MS = 200;

interface RunLine {
  results: number;
  failed: number;
}

export interface RateLimitCase {
  rpm: number;
  items: number;
  concurrency: number;
  declared: boolean;
  headers: boolean;
  run: unknown;
  fake: { requests: number; answered: number; tooMany: number; firstAt: number; lastAt: number };
  achievedPerSecond: number;
  shareOfLimit: number;
  refusedShare: number;
  lost: number;
}

const CASES = [
  { name: 'declared', declared: true, headers: true },
  { name: 'undeclared, learned from headers', declared: false, headers: true },
  { name: 'undeclared, no headers', declared: false, headers: false },
] as const;

export async function rateLimitFigures(
  dir: string,
): Promise<{ cases: Record<string, RateLimitCase>; checks: Check[] }> {
  const cases: Record<string, RateLimitCase> = {};
  const checks: Check[] = [];
  for (const c of CASES) {
    const limited = await startFake([
      '--latency-ms',
      String(LATENCY_MS),
      '--rpm',
      String(RPM),
      ...(c.headers ? [] : ['--no-headers']),
    ]);
    try {
      const env = { ...process.env, ASSAY_LIMITS: c.declared ? `vllm:bench=${RPM}rpm` : '' };
      const run = await runPart<RunLine>(
        'throughput',
        [
          '--mode',
          'assay',
          '--url',
          limited.url,
          '--items',
          String(RPM_ITEMS),
          '--concurrency',
          '32',
          '--dir',
          dir,
        ],
        { timeoutMs: 300_000, env },
      );
      const stats = await limited.stats();
      const achievedPerSecond = stats.answered / ((stats.lastAt - stats.firstAt) / 1000);
      const limitPerSecond = RPM / 60;
      const lost = RPM_ITEMS - (run.value?.results ?? 0);
      const shareOfLimit = achievedPerSecond / limitPerSecond;
      const refusedShare = stats.requests > 0 ? stats.tooMany / stats.requests : 0;
      cases[c.name] = {
        rpm: RPM,
        items: RPM_ITEMS,
        concurrency: 32,
        declared: c.declared,
        headers: c.headers,
        run: run.value ?? run.error,
        fake: stats,
        achievedPerSecond: +achievedPerSecond.toFixed(2),
        shareOfLimit: +shareOfLimit.toFixed(3),
        refusedShare: +refusedShare.toFixed(4),
        lost,
      };
      const target =
        c.name === 'declared'
          ? {
              target: '≥ 0.9 of the limit, 429s ≤ 10 %, 0 lost',
              pass: shareOfLimit >= 0.9 && refusedShare <= 0.1 && lost === 0,
            }
          : c.headers
            ? {
                target: '≥ 0.9 of the limit, 429s ≤ 2 %, 0 lost',
                pass: shareOfLimit >= 0.9 && refusedShare <= 0.02 && lost === 0,
              }
            : { target: '(for comparison)' };
      checks.push({
        figure: `rate limit ${RPM} RPM, ${RPM_ITEMS} items, C = 32, ${c.name}`,
        measured: `${achievedPerSecond.toFixed(1)}/s = ${shareOfLimit.toFixed(2)} of the limit; ${stats.tooMany} × 429 (${(refusedShare * 100).toFixed(1)} % of ${stats.requests} requests); ${lost} lost, ${run.value?.failed ?? '?'} failed`,
        bound: `limit ${limitPerSecond}/s`,
        ...target,
      });
    } finally {
      await limited.close();
    }
  }
  return { cases, checks };
}
