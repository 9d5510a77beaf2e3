/**
 * Sweeps in the AWS shell, against moto_server, with the example sweeps under --simulate: one
 * suite upload fans out a run per variant, the sweep is aggregated once when the last run is
 * done, and its report equals the local shell's; the aggregator keeps leaderboard.json in the
 * bucket and the LEADERBOARD partition current. A repeated trigger changes nothing.
 */
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { datasetFileOf } from '../../cli/local-run.js';
import { runSweep } from '../../cli/sweep.js';
import { DynamoLeaderboard, DynamoSweepStore } from '../../shared/adapters/aws/dynamo-sweeps.js';
import { datasetKeyOf, suiteKey } from '../../shared/lib/layout/bucket.js';
import { simulatedId } from '../../shared/model/provider-ids.js';
import { mapSuiteBackends } from '../../shared/model/variants.js';
import { validateSuite } from '../../shared/registry/suite.js';
import type { LeaderboardTable } from '../../shared/reports/leaderboard.js';
import type { SweepReport, SweepVariant } from '../../shared/sweeps/sweep.js';
import { REPO, tempDir } from '../helpers.js';
import { pipelineStack } from './pipeline-stack.js';

const EXAMPLES = join(REPO, 'examples');
const stack = pipelineStack('sweeps', {
  withoutApiKeys: true,
  resources: { itemsVisibilityTimeout: 5, maxReceiveCount: 3 },
  workerBatchSize: 10,
  workerConcurrency: 4,
  prompts: [join(REPO, 'prompts'), join(EXAMPLES, 'prompts')],
});

/** An example sweep as `--simulate` uploads it; the GEC one on a 48-item sample, to keep moto quick. */
async function exampleSweep(file: string, sample?: number): Promise<Record<string, unknown>> {
  const raw = JSON.parse(await readFile(join(EXAMPLES, file), 'utf8')) as Record<string, unknown>;
  const simulated = mapSuiteBackends(raw, simulatedId);
  if (sample) simulated.run = { ...(raw.run as object), sample: { n: sample, seed: 3 } };
  return simulated;
}

/**
 * What must be the same in both shells: everything but ids, dates and where the runs live. The
 * simulator reports the latency it draws, so latency figures and verdicts on latency agree too.
 */
function comparable(v: SweepVariant) {
  return {
    name: v.name,
    rank: v.rank,
    tied: v.tied,
    rankValue: v.rankValue,
    metrics: v.metrics,
    counts: v.counts,
    per10kUsd: v.per10kUsd,
    latencyMs: v.latencyMs,
    pareto: v.pareto,
    verdict: v.verdict,
    comparison: v.comparison,
    gate: v.gate?.conditions.map(({ condition, passed, value, against }) => ({
      condition,
      passed,
      value,
      against,
    })),
  };
}

async function localSweep(suite: Record<string, unknown>): Promise<SweepReport> {
  const dir = await tempDir('assay-sweep-local-');
  const loaded = validateSuite(suite, 'example sweep');
  const { sweep } = await runSweep(loaded, EXAMPLES, await datasetFileOf(loaded, EXAMPLES), {
    runsDir: join(dir, 'runs'),
    cachePath: join(dir, 'llm-cache.jsonl'),
    env: {},
  });
  return sweep;
}

/** Uploads the suite, then its dataset, and drives every queue until sweep.json is in the bucket. */
async function cloudSweep(suite: Record<string, unknown>): Promise<{ key: string; sweep: SweepReport }> {
  const { blobs, poller } = stack();
  const name = String(suite.name);
  await blobs.put(suiteKey(name), JSON.stringify(suite), 'application/json');
  await poller.drain({ only: ['ingest'] });
  const loaded = validateSuite(suite, 'example sweep');
  const local = join(EXAMPLES, loaded.dataset.path);
  await blobs.put(datasetKeyOf(loaded)!, await readFile(local));
  let key: string | undefined;
  await poller.runUntil(async () => {
    key = (await blobs.list(`reports/${name}/sweeps/`)).find((k) => k.endsWith('/sweep.json'));
    return key !== undefined;
  });
  await poller.drain();
  return { key: key!, sweep: JSON.parse(new TextDecoder().decode(await blobs.get(key!))) as SweepReport };
}

describe('sweeps on moto', { timeout: 180_000 }, () => {
  it('GEC over three backends with a required gate: one upload, a run per variant, the sweep report of a local sweep', async () => {
    const { clients, res, blobs, poller, runStore } = stack();
    const suite = await exampleSweep('gec-backends.suite.json', 48);
    const [local, cloud] = [await localSweep(suite), await cloudSweep(suite)];

    expect(cloud.key).toBe(`reports/gec-backends-en/sweeps/${cloud.sweep.sweepId}/sweep.json`);
    expect(cloud.sweep.variants.map((v) => v.name).sort()).toEqual(
      ['claude-haiku-4-5', 'gemini-2.5-flash', 'gpt-4o-mini'].sort(),
    );
    expect(cloud.sweep.simulated).toBe('all');
    expect(cloud.sweep.gate?.required.sort()).toEqual(['claude-haiku-4-5', 'gemini-2.5-flash']);
    expect(cloud.sweep.variants.map(comparable)).toEqual(local.variants.map(comparable));
    for (const v of cloud.sweep.variants) {
      expect(v.counts.items).toBe(48);
      expect(v.verdict).toBe(
        v.name === 'gpt-4o-mini' ? 'baseline' : v.gate!.promoted ? 'promoted' : 'not promoted',
      );
    }
    expect(await blobs.list(`reports/gec-backends-en/sweeps/${cloud.sweep.sweepId}/`)).toEqual([
      `reports/gec-backends-en/sweeps/${cloud.sweep.sweepId}/sweep.html`,
      `reports/gec-backends-en/sweeps/${cloud.sweep.sweepId}/sweep.json`,
      `reports/gec-backends-en/sweeps/${cloud.sweep.sweepId}/sweep.txt`,
    ]);
    // Each variant is a run of its own, with its report where a run's report goes.
    for (const v of cloud.sweep.variants) {
      expect(await runStore.getRun(v.runId)).toMatchObject({
        status: 'done',
        suiteName: `gec-backends-en.${v.name}`,
      });
      expect(await blobs.list(`reports/gec-backends-en.${v.name}/${v.runId}/`)).toContain(
        `reports/gec-backends-en.${v.name}/${v.runId}/report.json`,
      );
    }
    const sweeps = new DynamoSweepStore({ client: clients.doc, tableName: res.table });
    expect(await sweeps.getSweep(cloud.sweep.sweepId)).toMatchObject({ status: 'done' });

    // Aggregated once: another trigger changes nothing.
    const written = (await blobs.get(cloud.key))!;
    await clients.sqs.send(
      new SendMessageCommand({
        QueueUrl: res.queues.aggregate.url,
        MessageBody: JSON.stringify({ sweepId: cloud.sweep.sweepId }),
      }),
    );
    await poller.drain();
    expect(await blobs.get(cloud.key)).toEqual(written);
  });

  it('two prompt versions: the sweep report, and the leaderboard lists every run of both sweeps', async () => {
    const { clients, res, blobs } = stack();
    const suite = await exampleSweep('reply-tone-prompts.suite.json');
    const [local, cloud] = [await localSweep(suite), await cloudSweep(suite)];

    expect(cloud.sweep.variants.map(comparable)).toEqual(local.variants.map(comparable));
    const v2 = cloud.sweep.variants.find((v) => v.name === 'v2')!;
    expect(v2.comparison?.promptChanges.map((c) => c.path)).toEqual(['tone-v2.md', 'tone.md']);
    expect(v2.gate?.conditions.map((c) => c.condition)).toEqual([
      'kappa >= baseline',
      'p95 latency where words(reply) >= 20 <= baseline + 50',
      'coverage not below the baseline (implicit)',
    ]);

    const board = JSON.parse(new TextDecoder().decode(await blobs.get('reports/leaderboard.json'))) as {
      tables: LeaderboardTable[];
    };
    const listed = board.tables.flatMap((t) => t.entries.map((e) => e.suite)).sort();
    expect(listed).toEqual(
      [
        'gec-backends-en.claude-haiku-4-5',
        'gec-backends-en.gemini-2.5-flash',
        'gec-backends-en.gpt-4o-mini',
        'reply-tone-prompts.v1',
        'reply-tone-prompts.v2',
      ].sort(),
    );
    expect(board.tables.every((t) => t.entries.every((e) => e.simulated))).toBe(true);
    const fromTable = await new DynamoLeaderboard({ client: clients.doc, tableName: res.table }).entries();
    expect(fromTable.map((e) => e.suite).sort()).toEqual(listed);
    expect(await blobs.get('reports/leaderboard.txt')).toBeDefined();

    // The CLI reads the same table (credentials, region and endpoint from the environment).
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [join(REPO, 'bin', 'assay.mjs'), 'leaderboard', '--table', res.table, '--json'],
      { cwd: REPO, env: process.env },
    );
    const cli = JSON.parse(stdout) as { tables: LeaderboardTable[] };
    expect(cli.tables.flatMap((t) => t.entries.map((e) => e.suite)).sort()).toEqual(listed);
    expect(cli.tables.map((t) => t.dataset).sort()).toEqual([
      'datasets/gec-backends-en/data/gold_tp_fp3_fp2_fp1_en.csv',
      'datasets/reply-tone-prompts/data/replies.csv',
    ]);
  });

  it("QA: the physics study's base and fine-tuned configurations, graded with the fast path, as a sweep", async () => {
    const { blobs } = stack();
    const suite = await exampleSweep('physics-qa.suite.json');
    const [local, cloud] = [await localSweep(suite), await cloudSweep(suite)];

    expect(cloud.sweep.task).toBe('qa');
    expect(cloud.sweep.variants.map(comparable)).toEqual(local.variants.map(comparable));
    for (const v of cloud.sweep.variants) expect(v.counts).toMatchObject({ items: 50, failed: 0 });
    const base = cloud.sweep.variants.find((v) => v.name === 'base')!;
    const report = JSON.parse(
      new TextDecoder().decode(await blobs.get(`reports/physics-qa.base/${base.runId}/report.json`)),
    ) as { metrics: { qa: { byType: Record<string, unknown>; decided: { fast: number; llm: number } } } };
    expect(Object.keys(report.metrics.qa.byType)).toEqual(['explanation', 'mcq', 'numeric']);
    expect(report.metrics.qa.decided.fast).toBeGreaterThan(0);
    expect(report.metrics.qa.decided.llm).toBeGreaterThanOrEqual(15); // every explanation
  });

  it('cleanup: three models, two passes each, ranked and gated by the family gate as locally', async () => {
    const suite = await exampleSweep('dictation-cleanup.suite.json');
    const [local, cloud] = [await localSweep(suite), await cloudSweep(suite)];

    expect(cloud.sweep.task).toBe('cleanup');
    // The family gate holds a latency condition: with drawn latencies its verdicts agree too.
    expect(cloud.sweep.variants.map(comparable)).toEqual(local.variants.map(comparable));
    expect(
      cloud.sweep.variants.some((v) => v.gate?.conditions.some((c) => c.condition.includes('latency'))),
    ).toBe(true);
    for (const v of cloud.sweep.variants) {
      expect(v.counts).toMatchObject({ items: 25, failed: 0 });
      // The study gate's three conditions and the coverage guard.
      if (v.name !== 'gpt-4o-mini') expect(v.gate?.conditions).toHaveLength(4);
    }
  });
});
