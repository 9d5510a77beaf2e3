/**
 * Summarization on the AWS shell (moto_server): SummEdits with `--simulate` through S3 → SQS →
 * Lambda → DynamoDB → aggregator gives the report a local run gives, a document larger than a
 * queue message travels by S3 reference, and a local ONNX model loads from an S3 prefix.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CreateBucketCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, describe, expect, it } from 'vitest';
import { runLocalCloud } from '../../cli/cloud/local-cloud.js';
import { runLocal } from '../../cli/local-run.js';
import { OnnxNli } from '../../shared/lib/encoders/onnx.js';
import type { Report } from '../../shared/model/report.js';
import { writeTinyNli } from '../fakes/tiny-onnx.js';
import { EXAMPLE_DATA, snapshotEnv, tempDir } from '../helpers.js';
import { motoClients, startMoto } from './moto.js';

afterAll(snapshotEnv());

/**
 * What must agree between the shells: every score's figures, and latency (the simulators report
 * the latency they draw, not the machine's); dates differ.
 */
const comparable = (r: Report) => ({
  counts: r.counts,
  scores: r.scores,
  metrics: r.metrics,
  cost: r.cost.totalUsd,
  latencyMs: r.latencyMs,
});

describe('summarization on moto', () => {
  it('SummEdits with --simulate: the cloud report equals the local one; a long document goes by S3 reference', {
    timeout: 240_000,
  }, async () => {
    process.env.POWERTOOLS_LOG_LEVEL ??= 'SILENT';
    for (const name of Object.keys(process.env)) if (name.endsWith('_API_KEY')) delete process.env[name];
    const dir = await tempDir('assay-summ-cloud-');
    const lines = (await readFile(join(EXAMPLE_DATA, 'summedits-samsum.jsonl'), 'utf8')).trim().split('\n');
    const sample = lines.slice(0, 40);
    // A dialogue of about 300 KB: more than one SQS message holds (256 KB).
    const first = JSON.parse(sample[0]!) as Record<string, unknown>;
    const long = { ...first, id: 'long-dialogue', doc: Array(2500).fill(first.doc).join(' ') };
    sample.push(JSON.stringify(long));
    await writeFile(join(dir, 'summedits.jsonl'), `${sample.join('\n')}\n`);
    const suite = JSON.parse(await readFile(join(EXAMPLE_DATA, '..', 'summedits.suite.json'), 'utf8'));
    delete suite.$schema;
    suite.dataset = { ...suite.dataset, path: 'summedits.jsonl', maxFieldChars: 1_000_000 };
    await writeFile(join(dir, 'suite.json'), JSON.stringify(suite));
    expect((long.doc as string).length).toBeGreaterThan(256 * 1024);

    const local = await runLocal({
      suitePath: join(dir, 'suite.json'),
      simulate: true,
      outDir: join(dir, 'local'),
      cachePath: join(dir, 'cache.jsonl'),
    });
    const localReport = JSON.parse(await readFile(join(local.outDir, 'report.json'), 'utf8')) as Report;
    const cloud = await runLocalCloud({
      suitePath: join(dir, 'suite.json'),
      simulate: true,
      outDir: join(dir, 'cloud'),
    });

    expect(cloud.report).toMatchObject({
      task: 'summarization',
      simulated: true,
      counts: { items: 41, scored: 41 },
    });
    expect(comparable(cloud.report!)).toEqual(comparable(localReport));
    for (const name of ['composite', 'nli', 'judge', 'coverage']) {
      expect(cloud.report!.scores[name]!.metrics.rocAuc).toMatchObject({ n: 41 });
      expect(cloud.report!.scores[name]!.metrics.balancedAccuracy).toMatchObject({ n: 41 });
      // The calibrated figures and the length bias are in the compared score blocks above, so
      // both shells agree on them; here: that they are there, over every item.
      expect(cloud.report!.scores[name]!.metrics.cvBalancedAccuracy).toMatchObject({ n: 41 });
      expect(cloud.report!.scores[name]!.metrics.calibratedThreshold).toMatchObject({ n: 41 });
      expect(cloud.report!.scores[name]!.bias!.length).toMatchObject({ n: 41 });
    }
    // The long document's result keeps its opening, length and digest, and its score.
    const labeled = await readFile(join(dir, 'cloud', 'labeled.csv'), 'utf8');
    expect(labeled).toMatch(/long-dialogue[^\n]*\[cut: \d+ characters in all, sha256:[0-9a-f]{16}\]/);
  });

  it('loads a local ONNX model from an S3 prefix, once', { timeout: 60_000 }, async () => {
    const moto = await startMoto();
    try {
      const clients = motoClients(moto.endpoint);
      await clients.s3.send(new CreateBucketCommand({ Bucket: 'models' }));
      const folder = await writeTinyNli(join(await tempDir(), 'nli'));
      const location = `s3://models/nli/tiny-${Date.now()}`;
      for (const file of ['onnx/model.onnx', 'tokenizer.json', 'tokenizer_config.json', 'config.json']) {
        await clients.s3.send(
          new PutObjectCommand({
            Bucket: 'models',
            Key: `${location.slice('s3://models/'.length)}/${file}`,
            Body: await readFile(join(folder, file)),
          }),
        );
      }
      const fromS3 = new OnnxNli(`onnx:${location}`, location, () => clients.s3);
      const fromDisk = new OnnxNli(`onnx:${folder}`, folder);
      const pairs = [{ premise: 'The court ruled.', hypothesis: 'The court did not rule.' }];
      expect((await fromS3.contradiction(pairs)).probabilities).toEqual(
        (await fromDisk.contradiction(pairs)).probabilities,
      );
      await expect(
        new OnnxNli('onnx:s3://models/none', 's3://models/none', () => clients.s3).contradiction(pairs),
      ).rejects.toThrow(/no objects under that prefix/);
    } finally {
      await moto.stop();
    }
  });
});
