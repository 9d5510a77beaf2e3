/**
 * Amazon Bedrock end to end, as a user with AWS credentials meets it: `assay quickstart` finds
 * the credentials and a region (and no other vendor's key), picks a Bedrock model, says which,
 * and judges with it through the real AWS SDK against the local Converse fake.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { ItemResult } from '../../shared/model/model.js';
import type { Report } from '../../shared/model/report.js';
import { type BedrockFake, bedrockError, bedrockSequence, startBedrockFake } from '../fakes/bedrock-fake.js';
import { assayCli, tempDir } from '../helpers.js';

const SAMPLE = 12;
const MODEL = 'us.amazon.nova-lite-v1:0';

let fake: BedrockFake;
beforeAll(async () => {
  fake = await startBedrockFake();
});
afterAll(async () => {
  await fake.close();
});
beforeEach(() => {
  fake.reset();
  fake.setHandler();
});

/** `assay quickstart` on a sample, with only AWS settings in the environment (no profile, no vendor key). */
async function quickstart(dir: string, extra: string[] = ['--no-progress']) {
  const out = join(dir, 'run');
  const env = {
    ...fake.env,
    AWS_PROFILE: '',
    AWS_DEFAULT_REGION: '',
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
  };
  const args = [
    'quickstart',
    '--sample',
    String(SAMPLE),
    '--out',
    out,
    '--runs',
    join(dir, 'runs'),
    ...extra,
  ];
  const done = await assayCli(args, dir, env).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (e: { code: number; stdout: string; stderr: string }) => e,
  );
  const report = JSON.parse(await readFile(join(out, 'report.json'), 'utf8')) as Report;
  const results = (await readFile(join(out, 'results.jsonl'), 'utf8'))
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as ItemResult);
  return { ...done, report, results };
}

describe('assay quickstart on Amazon Bedrock', { timeout: 120_000 }, () => {
  it('picks Nova Lite, says so, retries a throttled call and ends with every item scored and priced', async () => {
    fake.setHandler(bedrockSequence(bedrockError('ThrottlingException', 'Too many requests, please wait')));
    const run = await quickstart(await tempDir('assay-bedrock-'));

    expect(run.code).toBe(0);
    expect(run.stderr).toContain(`judging with bedrock:${MODEL} on Amazon Bedrock`);
    expect(run.stderr).toContain('Another model: assay quickstart --backend bedrock:<model-id>');
    expect(fake.requests.every((r) => r.path === `/model/${encodeURIComponent(MODEL)}/converse`)).toBe(true);
    // One call per item, plus the throttled one made again.
    expect(fake.requests).toHaveLength(SAMPLE + 1);

    expect(run.report.counts.scored).toBe(SAMPLE);
    expect(run.results.filter((r) => r.status === 'scored')).toHaveLength(SAMPLE);
    expect(run.report.cost.totalUsd).toBeGreaterThan(0);
    expect(run.report.cost.priced).not.toBe(false);
    expect(run.report.cost.unpriced ?? []).toEqual([]);
  });

  it('in the batch lane, says Bedrock has no batch here and scores every item synchronously', async () => {
    const run = await quickstart(await tempDir('assay-bedrock-'), ['--lane', 'batch']);

    expect(run.code).toBe(0);
    expect(run.stderr).toMatch(
      /batch to bedrock:\S+ not accepted \(.*Bedrock batch inference is not supported.*\); its 12 requests go synchronous/,
    );
    expect(fake.requests).toHaveLength(SAMPLE);
    expect(run.report.counts.scored).toBe(SAMPLE);
    expect(run.report.cost.batch).toBeUndefined();
  });

  it('fails every item as `provider` with the fix in the message when model access is denied', async () => {
    fake.setHandler(() =>
      bedrockError(
        'AccessDeniedException',
        "You don't have access to the model with the specified model ID.",
      ),
    );
    const run = await quickstart(await tempDir('assay-bedrock-'));

    expect(run.code).toBe(1);
    // Permanent: asked once per item, never retried.
    expect(fake.requests).toHaveLength(SAMPLE);
    expect(run.results).toHaveLength(SAMPLE);
    for (const result of run.results) {
      expect(result.status).toBe('failed');
      expect(result.failure?.kind).toBe('provider');
      expect(result.failure?.message).toContain('AccessDeniedException');
      expect(result.failure?.message).toContain(
        `Enable model access for ${MODEL} in the Bedrock console (Model access, region us-east-1)`,
      );
    }
  });
});
