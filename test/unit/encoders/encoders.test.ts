import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cosine } from '../../../shared/families/summarization/scores.js';
import {
  contradictionIndex,
  meanPool,
  OnnxEmbedder,
  OnnxNli,
  softmax,
} from '../../../shared/lib/encoders/onnx.js';
import { EncoderPool, encoderIdProblem, simulatedEncoderId } from '../../../shared/lib/encoders/registry.js';
import { SimEmbedder, simContradiction } from '../../../shared/lib/encoders/sim.js';
import { EMBEDDED_PRICES } from '../../../shared/lib/providers/pricing.js';
import { ProviderError } from '../../../shared/model/errors.js';
import { MissingCredentialsError, UnknownProviderError } from '../../../shared/model/provider-errors.js';
import { TINY_VOCAB, tinyEmbeddingTable, writeTinyEmbedder, writeTinyNli } from '../../fakes/tiny-onnx.js';
import { useVendorFake } from '../../fakes/use-vendor-fake.js';
import { fakeEmbedding, sequence } from '../../fakes/vendor-fake.js';
import { tempDir } from '../../helpers.js';

describe('local ONNX encoders (onnxruntime-node on tiny models the test builds)', () => {
  it('embeds: token states mean-pooled under the attention mask, then L2-normalised', async () => {
    const folder = await writeTinyEmbedder(join(await tempDir(), 'minilm'));
    const embedder = new OnnxEmbedder(`onnx:${folder}`, folder);
    const { vectors, spend } = await embedder.embed([
      'The court ruled.',
      'Marbury sued Madison',
      'the COURT ruled .',
    ]);

    // By hand: [CLS] the court ruled . [SEP] → the mean of those six table rows, normalised.
    const table = tinyEmbeddingTable();
    const ids = ['[CLS]', 'the', 'court', 'ruled', '.', '[SEP]'].map((t) => TINY_VOCAB.indexOf(t));
    const mean = [0, 1, 2, 3].map((d) => ids.reduce((s, id) => s + table[id]![d]!, 0) / ids.length);
    const norm = Math.hypot(...mean);
    expect(vectors[0]).toHaveLength(4);
    for (const [d, x] of vectors[0]!.entries()) expect(x).toBeCloseTo(mean[d]! / norm, 5);
    // Padding ([PAD] after the shorter text) changes nothing: the same text, alone, embeds the same.
    const alone = await embedder.embed(['The court ruled.']);
    for (const [d, x] of alone.vectors[0]!.entries()) expect(x).toBeCloseTo(vectors[0]![d]!, 5);
    // Lower-casing is the tokenizer's: the same words embed the same.
    expect(cosine(vectors[0]!, vectors[2]!)).toBeCloseTo(1, 5);
    expect(cosine(vectors[0]!, vectors[1]!)!).toBeLessThan(0.99);
    expect(spend).toMatchObject({ costUsd: 0, tokens: 6 + 5 + 6 });
  });

  it('NLI: softmax over the logits, the contradiction class found by its label in config.json', async () => {
    const folder = await writeTinyNli(join(await tempDir(), 'nli'));
    const nli = new OnnxNli(`onnx:${folder}`, folder);
    const { probabilities } = await nli.contradiction([
      { premise: 'The court ruled.', hypothesis: 'The court did not rule.' },
      { premise: 'The court ruled.', hypothesis: 'The court ruled.' },
    ]);
    // By hand. Pair 1 is 13 tokens ([CLS] the court ruled . [SEP] the court did not rule . [SEP]),
    // pair 2 is 11, padded to 13 and masked. Mean logits (contradiction, neutral, entailment):
    // pair 1 (40, 3·0.5, 9)/13 and pair 2 (0, 3·0.5, 8)/13.
    const p = (logits: number[]) => Math.exp(logits[0]!) / logits.reduce((s, x) => s + Math.exp(x), 0);
    expect(probabilities[0]).toBeCloseTo(p([40 / 13, 1.5 / 13, 9 / 13]), 5);
    expect(probabilities[1]).toBeCloseTo(p([0, 1.5 / 13, 8 / 13]), 5);
    expect(probabilities[0]).toBeGreaterThan(0.8);
    expect(contradictionIndex({ id2label: { 0: 'entailment', 1: 'neutral', 2: 'contradiction' } }, 'x')).toBe(
      2,
    );
    expect(() => contradictionIndex({ id2label: { 0: 'positive', 1: 'negative' } }, 'm')).toThrow(
      /names no contradiction class/,
    );
    expect(softmax([0, 0])).toEqual([0.5, 0.5]);
  });

  it('says what is missing when a model folder is incomplete', async () => {
    const dir = await tempDir();
    await expect(new OnnxEmbedder('onnx:x', join(dir, 'nowhere')).embed(['a'])).rejects.toThrow(
      /does not exist/,
    );
    const folder = await writeTinyEmbedder(join(dir, 'broken'));
    await rm(join(folder, 'onnx'), { recursive: true });
    await expect(new OnnxEmbedder('onnx:y', folder).embed(['a'])).rejects.toThrow(/no ONNX weights/);
    const noTokenizer = join(dir, 'no-tokenizer');
    await mkdir(noTokenizer);
    await writeFile(join(noTokenizer, 'model.onnx'), 'not a model');
    await expect(new OnnxEmbedder('onnx:z', noTokenizer).embed(['a'])).rejects.toThrow(
      /tokenizer.json is missing/,
    );
  });

  it('mean pooling skips masked tokens', () => {
    const states = Float32Array.from([1, 0, 3, 4, 100, 100]);
    expect(meanPool(states, [1, 3, 2], [[1, 1, 0]])[0]).toEqual([2 / Math.hypot(2, 2), 2 / Math.hypot(2, 2)]);
  });
});

describe('provider embedders through the official SDKs (HTTP fake)', () => {
  const fake = useVendorFake();
  const pool = () => new EncoderPool({ env: fake.env, prices: EMBEDDED_PRICES });

  it('OpenAI: vectors in input order, priced by the tokens the API reports', async () => {
    const { vectors, spend } = await pool()
      .embedder('openai:text-embedding-3-small')
      .embed(['the court', 'ruled']);
    expect(vectors).toEqual([fakeEmbedding('the court'), fakeEmbedding('ruled')]);
    expect(fake.requests[0]).toMatchObject({
      path: '/v1/embeddings',
      body: { model: 'text-embedding-3-small' },
    });
    // ceil(9/4) + ceil(5/4) = 3 + 2 tokens at $0.02 per 1M.
    expect(spend.tokens).toBe(5);
    expect(spend.costUsd).toBeCloseTo((5 * 0.02) / 1e6, 12);
  });

  it('Gemini: batchEmbedContents, tokens estimated at four characters each', async () => {
    const { vectors, spend } = await pool()
      .embedder('gemini:gemini-embedding-001')
      .embed(['the court', 'ruled']);
    expect(vectors).toEqual([fakeEmbedding('the court'), fakeEmbedding('ruled')]);
    expect(fake.requests[0]!.path).toMatch(/models\/gemini-embedding-001:batchEmbedContents$/);
    expect(spend.tokens).toBe(5);
  });

  it('retries a 429 and fails a 400 as a provider error', async () => {
    fake.setHandler(sequence({ status: 429, headers: { 'retry-after': '0' } }));
    await expect(pool().embedder('openai:text-embedding-3-small').embed(['a'])).resolves.toMatchObject({
      vectors: [fakeEmbedding('a')],
    });
    expect(fake.requests).toHaveLength(2);
    fake.setHandler(() => ({ status: 400 }));
    await expect(pool().embedder('openai:text-embedding-3-small').embed(['a'])).rejects.toBeInstanceOf(
      ProviderError,
    );
  });

  it('builds only what an id names, and names the missing variable', () => {
    expect(() => new EncoderPool({ env: {}, prices: EMBEDDED_PRICES }).embedder('openai:x')).toThrow(
      MissingCredentialsError,
    );
    expect(() => pool().nli('openai:text-embedding-3-small')).toThrow(UnknownProviderError);
    expect(encoderIdProblem('embed', 'anthropic:x')).toMatch(/is not openai:…, gemini:…, onnx:…, sim:…/);
    expect(encoderIdProblem('nli', 'onnx:s3://bucket/models/nli')).toBeUndefined();
    expect(simulatedEncoderId('embed', 'onnx:models/minilm')).toBe('sim:embed');
    expect(simulatedEncoderId('nli', 'onnx:models/nli')).toBe('sim:nli');
  });
});

describe('simulated encoders (named sim:, knowing no gold)', () => {
  it('sim:embed puts sentences that share words close together', async () => {
    const { vectors } = await new SimEmbedder().embed([
      'The court ruled for Marbury',
      'Marbury won: the court ruled',
      'Bananas are yellow',
    ]);
    expect(cosine(vectors[0]!, vectors[1]!)!).toBeGreaterThan(0.5);
    expect(cosine(vectors[0]!, vectors[2]!) ?? 0).toBeLessThan(0.5);
  });

  it('sim:nli flags a negation or a changed number on shared words, and nothing else', () => {
    const premise = 'Amanda baked 3 cakes for the party.';
    expect(
      simContradiction({ premise, hypothesis: 'Amanda did not bake cakes for the party.' }),
    ).toBeGreaterThan(0.5);
    expect(simContradiction({ premise, hypothesis: 'Amanda baked 5 cakes for the party.' })).toBeGreaterThan(
      0.5,
    );
    expect(simContradiction({ premise, hypothesis: 'Amanda baked 3 cakes for the party.' })).toBeLessThan(
      0.5,
    );
    expect(simContradiction({ premise, hypothesis: 'Jerry walks the dog.' })).toBeLessThan(0.5);
  });
});
