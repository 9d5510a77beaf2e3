/**
 * Local ONNX encoders: a sentence embedder (e.g. all-MiniLM-L6-v2) and an NLI cross-encoder
 * (e.g. nli-deberta-v3-xsmall), run by onnxruntime-node on this machine with their own
 * tokenizer (`@huggingface/tokenizers`). No model hub is reached: a model is a folder as
 * Hugging Face's ONNX exports lay it out —
 *
 *   tokenizer.json, tokenizer_config.json, config.json (the NLI labels, `id2label`),
 *   model.onnx | onnx/model_quantized.onnx | onnx/model.onnx
 *
 * — on disk (`onnx:models/all-MiniLM-L6-v2`) or under an S3 prefix (`onnx:s3://bucket/models/minilm`),
 * downloaded once per process into the temp folder. onnxruntime-node is loaded on first use,
 * so nothing else pays for its native library.
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import type { S3Client } from '@aws-sdk/client-s3';
import type { Tokenizer } from '@huggingface/tokenizers';
import type { InferenceSession, Tensor } from 'onnxruntime-node';
import { ConfigError } from '../../model/errors.js';
import type { Embedder, EncoderSpend, NliModel, NliPair } from './types.js';

/** The S3 client models are read with, built (or imported) only when a model lives on S3. */
export type S3Factory = () => S3Client | Promise<S3Client>;

export class ModelLoadError extends ConfigError {
  override readonly name = 'ModelLoadError';
}

/** Where the ONNX weights may sit in an exported model folder, most preferred first. */
const MODEL_FILES = ['model.onnx', 'onnx/model_quantized.onnx', 'onnx/model.onnx'];
/** Inputs are cut to this many tokens (both models were trained at ≤ 512). */
const MAX_TOKENS = 512;
/** Texts (or pairs) per forward pass. */
const BATCH = 16;

type Ort = typeof import('onnxruntime-node');
let ort: Promise<Ort> | undefined;

/**
 * What installs the runtime: onnxruntime-node is an optional peer of Assay (package.json),
 * left to the users of local ONNX models because it is large and native.
 */
export const ONNX_RUNTIME_INSTALL = 'npm install onnxruntime-node@1.30.0';

/** Why onnxruntime-node could not be imported, and what to do about it. */
export function runtimeLoadMessage(error: unknown): string {
  const code = (error as { code?: unknown } | undefined)?.code;
  const notFound = code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND';
  // Not found itself, rather than a package it needs.
  if (notFound && error instanceof Error && error.message.includes("'onnxruntime-node'")) {
    return `local ONNX encoders (onnx:…) need onnxruntime-node, which is not installed: run \`${ONNX_RUNTIME_INSTALL}\` where Assay is installed (with -g for a global Assay); on AWS Lambda, a layer must provide it`;
  }
  return `onnxruntime-node could not be loaded (${error instanceof Error ? error.message : String(error)}); local ONNX encoders need it installed beside Assay (${ONNX_RUNTIME_INSTALL}; on AWS Lambda: a layer that provides it)`;
}

function loadRuntime(): Promise<Ort> {
  ort ??= import('onnxruntime-node').catch((error: unknown) => {
    ort = undefined;
    throw new ModelLoadError(runtimeLoadMessage(error), { cause: error });
  });
  return ort;
}

/** Loads onnxruntime-node now: a run that needs it fails before its first item when it is missing. */
export async function requireOnnxRuntime(): Promise<void> {
  await loadRuntime();
}

/** A model folder on disk: the folder itself, or an S3 prefix copied into the temp folder once. */
async function modelFolder(location: string, s3: S3Factory | undefined): Promise<string> {
  if (!location.startsWith('s3://')) return resolve(location);
  const [bucket, ...rest] = location.slice(5).split('/');
  const prefix = rest.filter(Boolean).join('/');
  if (!bucket) throw new ModelLoadError(`onnx:${location}: no bucket`);
  if (!s3) throw new ModelLoadError(`onnx:${location}: no S3 client in this shell`);
  const local = join(
    tmpdir(),
    'assay-models',
    createHash('sha256').update(location).digest('hex').slice(0, 16),
  );
  if (existsSync(join(local, '.complete'))) return local;
  // The S3 client and its commands load only when a model lives on S3 (not on every CLI start).
  const { GetObjectCommand, ListObjectsV2Command } = await import('@aws-sdk/client-s3');
  const client = await s3();
  let token: string | undefined;
  let copied = 0;
  do {
    const page = await client.send(
      new ListObjectsV2Command({
        Bucket: bucket,
        Prefix: prefix ? `${prefix}/` : undefined,
        ContinuationToken: token,
      }),
    );
    for (const object of page.Contents ?? []) {
      if (!object.Key || object.Key.endsWith('/')) continue;
      const body = await client.send(new GetObjectCommand({ Bucket: bucket, Key: object.Key }));
      const bytes = await body.Body?.transformToByteArray();
      if (!bytes) throw new ModelLoadError(`onnx:${location}: empty object ${object.Key}`);
      const target = join(local, object.Key.slice(prefix ? prefix.length + 1 : 0));
      await mkdir(dirname(target), { recursive: true });
      // Written aside, then renamed: a concurrent reader never sees half a file.
      await writeFile(`${target}.part`, bytes);
      await rename(`${target}.part`, target);
      copied += 1;
    }
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token);
  if (copied === 0) throw new ModelLoadError(`onnx:${location}: no objects under that prefix`);
  await writeFile(join(local, '.complete'), '');
  return local;
}

async function readJson(folder: string, name: string, required: boolean): Promise<Record<string, unknown>> {
  const path = join(folder, name);
  if (!existsSync(path)) {
    if (required) throw new ModelLoadError(`${folder}: ${name} is missing`);
    return {};
  }
  try {
    return JSON.parse(await readFile(path, 'utf8')) as Record<string, unknown>;
  } catch (error) {
    throw new ModelLoadError(`${path}: not JSON`, { cause: error });
  }
}

/** A loaded model: its tokenizer, its session and what its config says. */
export interface LoadedModel {
  folder: string;
  tokenizer: Tokenizer;
  session: InferenceSession;
  config: Record<string, unknown>;
  padId: number;
  ort: Ort;
}

const loaded = new Map<string, Promise<LoadedModel>>();

/** Loads (once per process) the model at a folder or S3 location. */
export function loadModel(location: string, s3?: S3Factory): Promise<LoadedModel> {
  let model = loaded.get(location);
  if (!model) {
    model = load(location, s3);
    loaded.set(location, model);
    model.catch(() => loaded.delete(location));
  }
  return model;
}

async function load(location: string, s3: S3Factory | undefined): Promise<LoadedModel> {
  const folder = await modelFolder(location, s3);
  if (!existsSync(folder)) throw new ModelLoadError(`model folder ${folder} does not exist`);
  const file = MODEL_FILES.map((name) => join(folder, name)).find(existsSync);
  if (!file) throw new ModelLoadError(`${folder}: no ONNX weights (looked for ${MODEL_FILES.join(', ')})`);
  const tokenizerConfig = await readJson(folder, 'tokenizer_config.json', false);
  const { Tokenizer } = await import('@huggingface/tokenizers');
  const tokenizer = new Tokenizer(await readJson(folder, 'tokenizer.json', true), tokenizerConfig);
  const config = await readJson(folder, 'config.json', false);
  const runtime = await loadRuntime();
  let session: InferenceSession;
  try {
    session = await runtime.InferenceSession.create(file, { graphOptimizationLevel: 'all' });
  } catch (error) {
    throw new ModelLoadError(`${file}: onnxruntime could not load it: ${String(error)}`, { cause: error });
  }
  const padToken = typeof tokenizerConfig.pad_token === 'string' ? tokenizerConfig.pad_token : '[PAD]';
  return { folder, tokenizer, session, config, padId: tokenizer.token_to_id(padToken) ?? 0, ort: runtime };
}

/** Tokenized texts (or pairs) as the padded int64 tensors a transformer's ONNX export takes. */
function encodeBatch(
  model: LoadedModel,
  texts: readonly (readonly [string, string?])[],
): { feeds: Record<string, Tensor>; mask: number[][]; tokens: number } {
  const encoded = texts.map(([text, pair]) => {
    const e = model.tokenizer.encode(text, {
      ...(pair !== undefined ? { text_pair: pair } : {}),
      return_token_type_ids: true,
    });
    const keep = Math.min(e.ids.length, MAX_TOKENS);
    return {
      ids: e.ids.slice(0, keep),
      mask: e.attention_mask.slice(0, keep),
      types: (e.token_type_ids ?? []).slice(0, keep),
    };
  });
  const width = Math.max(1, ...encoded.map((e) => e.ids.length));
  const size = encoded.length * width;
  const ids = new BigInt64Array(size).fill(BigInt(model.padId));
  const mask = new BigInt64Array(size);
  const types = new BigInt64Array(size);
  encoded.forEach((e, row) => {
    for (let i = 0; i < e.ids.length; i++) {
      ids[row * width + i] = BigInt(e.ids[i]!);
      mask[row * width + i] = BigInt(e.mask[i] ?? 1);
      types[row * width + i] = BigInt(e.types[i] ?? 0);
    }
  });
  const dims = [encoded.length, width];
  const all: Record<string, Tensor> = {
    input_ids: new model.ort.Tensor('int64', ids, dims),
    attention_mask: new model.ort.Tensor('int64', mask, dims),
    token_type_ids: new model.ort.Tensor('int64', types, dims),
  };
  // Each export declares the inputs it takes (DeBERTa-v3 has no token types).
  const feeds = Object.fromEntries(model.session.inputNames.map((name) => [name, all[name]!]));
  for (const name of model.session.inputNames) {
    if (!feeds[name]) throw new ModelLoadError(`${model.folder}: unknown model input ${name}`);
  }
  return {
    feeds,
    mask: encoded.map((e) => Array.from({ length: width }, (_, i) => e.mask[i] ?? 0)),
    tokens: encoded.reduce((sum, e) => sum + e.ids.length, 0),
  };
}

async function batched<T, R>(
  items: readonly T[],
  run: (batch: readonly T[]) => Promise<{ values: R[]; tokens: number }>,
): Promise<{ values: R[]; spend: EncoderSpend }> {
  const started = performance.now();
  const values: R[] = [];
  let tokens = 0;
  for (let i = 0; i < items.length; i += BATCH) {
    const out = await run(items.slice(i, i + BATCH));
    values.push(...out.values);
    tokens += out.tokens;
  }
  return { values, spend: { tokens, costUsd: 0, latencyMs: performance.now() - started } };
}

/** A [rows, columns] float tensor as rows. */
function rowsOf(tensor: Tensor): number[][] {
  const [rows, columns] = tensor.dims as [number, number];
  const data = tensor.data as Float32Array;
  return Array.from({ length: rows }, (_, r) => Array.from(data.subarray(r * columns, (r + 1) * columns)));
}

/**
 * Mean pooling of the token states under the attention mask, then L2 normalisation: how
 * sentence-transformers turns all-MiniLM-L6-v2's token states into a sentence vector.
 */
export function meanPool(
  states: Float32Array,
  dims: readonly number[],
  mask: readonly (readonly number[])[],
): number[][] {
  const [batch, width, size] = dims as [number, number, number];
  const out: number[][] = [];
  for (let b = 0; b < batch; b++) {
    const vector = new Array<number>(size).fill(0);
    let count = 0;
    for (let t = 0; t < width; t++) {
      if (!mask[b]![t]) continue;
      count += 1;
      const base = (b * width + t) * size;
      for (let d = 0; d < size; d++) vector[d]! += states[base + d]!;
    }
    // The mean's direction is the sum's: normalising the sum is normalising the mean.
    const norm = Math.hypot(...vector);
    out.push(vector.map((x) => (count === 0 || norm === 0 ? 0 : x / norm)));
  }
  return out;
}

export class OnnxEmbedder implements Embedder {
  readonly simulated = false;
  constructor(
    readonly id: string,
    private readonly location: string,
    private readonly s3?: S3Factory,
  ) {}

  async embed(texts: readonly string[]) {
    const model = await loadModel(this.location, this.s3);
    const { values, spend } = await batched(texts, async (batch) => {
      const { feeds, mask, tokens } = encodeBatch(
        model,
        batch.map((t) => [t]),
      );
      const out = await model.session.run(feeds);
      // A sentence-embedding export gives the pooled vector; a plain encoder, token states to pool.
      const pooled = out.sentence_embedding ?? out.sentence_embeddings;
      if (pooled) return { values: rowsOf(pooled), tokens };
      const states = out.last_hidden_state ?? out.token_embeddings ?? out[model.session.outputNames[0]!];
      if (!states || states.dims.length !== 3)
        throw new ModelLoadError(`${model.folder}: expected token states [batch, tokens, size] as output`);
      return { values: meanPool(states.data as Float32Array, states.dims, mask), tokens };
    });
    return { vectors: values, spend };
  }
}

/** The index of the contradiction class in the model's `id2label` (MNLI exports differ in order). */
export function contradictionIndex(config: Record<string, unknown>, folder: string): number {
  const labels = (config.id2label ?? {}) as Record<string, string>;
  const found = Object.entries(labels).find(([, label]) => /contradict/i.test(label));
  if (!found)
    throw new ModelLoadError(
      `${folder}: config.json id2label names no contradiction class (${JSON.stringify(labels)}): not an NLI model?`,
    );
  return Number(found[0]);
}

export function softmax(logits: readonly number[]): number[] {
  const max = Math.max(...logits);
  const exps = logits.map((x) => Math.exp(x - max));
  const sum = exps.reduce((a, b) => a + b, 0);
  return exps.map((x) => x / sum);
}

export class OnnxNli implements NliModel {
  readonly simulated = false;
  constructor(
    readonly id: string,
    private readonly location: string,
    private readonly s3?: S3Factory,
  ) {}

  async contradiction(pairs: readonly NliPair[]) {
    const model = await loadModel(this.location, this.s3);
    const index = contradictionIndex(model.config, model.folder);
    const { values, spend } = await batched(pairs, async (batch) => {
      const { feeds, tokens } = encodeBatch(
        model,
        batch.map((p) => [p.premise, p.hypothesis]),
      );
      const out = await model.session.run(feeds);
      const logits = out.logits ?? out[model.session.outputNames[0]!];
      if (!logits || logits.dims.length !== 2)
        throw new ModelLoadError(`${model.folder}: expected logits [batch, classes] as output`);
      return { values: rowsOf(logits).map((row) => softmax(row)[index]!), tokens };
    });
    return { probabilities: values, spend };
  }
}
