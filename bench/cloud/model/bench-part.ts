/**
 * The capacity model as a part of `npm run bench`: `bench/cloud-model.ts` at 100,000 items, with
 * 60,000 (also aggregated in parts, so that per-run figures are fitted through two sizes) for
 * the per-item figures side by side, in a child process of its own (`--expose-gc`);
 * its goals become rows of the bench's table, PASS or FAIL against their targets, and its
 * per-item figures rows beside those of the smaller run.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from '../../parts/data.js';
import { collected } from '../../parts/spawn.js';
import type { Check } from '../../parts/table.js';
import { FUNCTIONS } from './figures.js';
import type { CloudModelReport } from './model.js';

export const CLOUD_ITEMS = 100_000;
export const CLOUD_COMPARE_ITEMS = 60_000;
/** A hang guard, not a target: the 100,000-item run takes minutes on 2 cores. */
const TIMEOUT_MS = 90 * 60_000;

export async function cloudModelPart(): Promise<{ figures: Record<string, unknown>; checks: Check[] }> {
  const dir = await mkdtemp(join(tmpdir(), 'assay-bench-cloud-'));
  const json = join(dir, 'cloud.json');
  try {
    const child = spawn(
      process.execPath,
      [
        '--expose-gc',
        '--import',
        'tsx',
        join(ROOT, 'bench', 'cloud-model.ts'),
        '--items',
        String(CLOUD_ITEMS),
        '--compare',
        String(CLOUD_COMPARE_ITEMS),
        '--json',
        json,
      ],
      { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const { code, stderr, timedOut } = await collected(child, TIMEOUT_MS);
    if (timedOut || code !== 0) {
      const why = timedOut
        ? `did not finish within ${TIMEOUT_MS / 60_000} min`
        : `exit ${code}: ${stderr.trim().split('\n').slice(-3).join(' | ')}`;
      return {
        figures: { error: why },
        checks: [
          {
            figure: `capacity model, ${CLOUD_ITEMS.toLocaleString('en-US')} items`,
            measured: why,
            bound: '',
            target: 'a report',
            pass: false,
          },
        ],
      };
    }
    return fromReport(JSON.parse(await readFile(json, 'utf8')) as CloudModelReport);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

function fromReport(report: CloudModelReport): { figures: Record<string, unknown>; checks: Check[] } {
  const n = (x: number) => x.toLocaleString('en-US');
  const small = report.compare?.items[0];
  const checks: Check[] = report.goals.map((g) => ({
    figure: `capacity model, ${n(report.items)} items: ${g.goal}`,
    measured: g.measured,
    bound: '',
    target: g.target,
    ...(g.pass === null ? {} : { pass: g.pass }),
  }));
  if (report.compare && small !== undefined) {
    const pick = [
      'awsCostUsd',
      'dynamoWriteUnits',
      'dynamoReadUnits',
      'sqsBilledRequests',
      'lambdaGbSeconds',
      'logBytes',
    ];
    checks.push({
      figure: `capacity model, per item at ${n(report.items)} (ratio to ${n(small)})`,
      measured: pick
        .map((name) => {
          const v = report.compare!.perItem[name];
          return v ? `${name} ${format(v.large)} (${v.ratio ?? '—'}×)` : '';
        })
        .filter(Boolean)
        .join(', '),
      bound: `${n(small)} items: ${pick.map((name) => `${name} ${format(report.compare!.perItem[name]?.small ?? 0)}`).join(', ')}`,
    });
  }
  const { lambda, projection, ...rest } = report;
  return {
    figures: {
      items: rest.items,
      itemsPerSecond: rest.itemsPerSecond,
      wallSeconds: rest.wallSeconds,
      hottestKey: rest.hottestKey,
      throttled: rest.throttled,
      stages: rest.stages,
      lambda: Object.fromEntries(
        FUNCTIONS.map((fn) => {
          const { byKind: _byKind, ...f } = lambda[fn];
          return [fn, f];
        }),
      ),
      awsCostPer1MUsd: rest.awsCostPer1MUsd,
      llmCostPer1MUsd: rest.llmCostPer1MUsd,
      perItem: rest.perItem,
      projection: Object.fromEntries(
        Object.entries(projection).map(([size, p]) => {
          const { checks: _checks, ...summary } = p;
          return [size, summary];
        }),
      ),
      goals: rest.goals,
      compare: rest.compare?.perItem,
      machine: rest.machine,
      model: rest.model,
    },
    checks,
  };
}

function format(x: number): string {
  return Math.abs(x) >= 1 ? String(Math.round(x * 100) / 100) : x.toPrecision(3);
}
