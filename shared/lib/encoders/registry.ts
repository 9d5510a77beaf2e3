/**
 * Builds encoders from ids, once per id per process, with credentials from the environment
 * (checked when built, so a missing key fails before the first item and names the variable).
 */
import { UnknownProviderError } from '../../model/provider-errors.js';
import { vendorSpec } from '../../model/vendors.js';
import type { PriceTable } from '../providers/pricing.js';
import { firstSet, requireVar } from '../providers/registry.js';
import { GeminiEmbedder, OpenAiEmbedder } from './api.js';
import { OnnxEmbedder, OnnxNli, type S3Factory } from './onnx.js';
import { SimEmbedder, SimNli } from './sim.js';
import type { Embedder, EncoderKind, NliModel } from './types.js';

export interface EncoderPoolOptions {
  prices: PriceTable;
  env?: NodeJS.ProcessEnv;
  /** For `onnx:s3://…` models; built on first use. */
  s3?: S3Factory;
  timeoutMs?: number;
  fetch?: typeof fetch;
}

/** The vendors each kind of encoder may name. */
export const ENCODER_VENDORS: Record<EncoderKind, readonly string[]> = {
  embed: ['openai', 'gemini', 'onnx', 'sim'],
  nli: ['onnx', 'sim'],
};

/** `openai:text-embedding-3-small` → vendor and the rest (an ONNX location may hold colons). */
export function splitEncoderId(id: string): { vendor: string; model: string } {
  const at = id.indexOf(':');
  return at < 0 ? { vendor: id, model: '' } : { vendor: id.slice(0, at), model: id.slice(at + 1) };
}

/** Why an id cannot name an encoder of this kind; undefined when it can (for suite validation). */
export function encoderIdProblem(kind: EncoderKind, id: string): string | undefined {
  const { vendor, model } = splitEncoderId(id);
  if (!ENCODER_VENDORS[kind].includes(vendor) || model === '')
    return `${id} is not ${ENCODER_VENDORS[kind].map((v) => `${v}:…`).join(', ')}`;
  return undefined;
}

/** The simulator standing in for an encoder under `--simulate`. */
export function simulatedEncoderId(kind: EncoderKind, id: string): string {
  return splitEncoderId(id).vendor === 'sim' ? id : kind === 'embed' ? 'sim:embed' : 'sim:nli';
}

export class EncoderPool {
  private readonly built = new Map<string, Embedder | NliModel>();

  constructor(private readonly options: EncoderPoolOptions) {}

  embedder(id: string): Embedder {
    return this.get('embed', id) as Embedder;
  }

  nli(id: string): NliModel {
    return this.get('nli', id) as NliModel;
  }

  /** Builds every listed encoder now, so a missing key or unknown vendor fails before the first item. */
  require(encoders: readonly { kind: EncoderKind; id: string }[]): void {
    for (const { kind, id } of encoders) this.get(kind, id);
  }

  private get(kind: EncoderKind, id: string): Embedder | NliModel {
    const key = `${kind}#${id}`;
    let encoder = this.built.get(key);
    if (!encoder) {
      encoder = this.create(kind, id);
      this.built.set(key, encoder);
    }
    return encoder;
  }

  private create(kind: EncoderKind, id: string): Embedder | NliModel {
    const problem = encoderIdProblem(kind, id);
    if (problem) throw new UnknownProviderError(`${kind === 'embed' ? 'embedder' : 'NLI model'} ${problem}`);
    const env = this.options.env ?? process.env;
    const { vendor, model } = splitEncoderId(id);
    const common = {
      id,
      prices: this.options.prices,
      timeoutMs: this.options.timeoutMs,
      fetch: this.options.fetch,
    };
    switch (vendor) {
      case 'sim':
        return kind === 'embed' ? new SimEmbedder(id) : new SimNli(id);
      case 'onnx':
        return kind === 'embed'
          ? new OnnxEmbedder(id, model, this.options.s3)
          : new OnnxNli(id, model, this.options.s3);
      case 'openai':
        return new OpenAiEmbedder({
          ...common,
          apiKey: requireVar(env, id, vendorSpec('openai')!.keyEnv),
          baseURL: firstSet(env, vendorSpec('openai')!.baseUrlEnv),
        });
      default:
        return new GeminiEmbedder({
          ...common,
          apiKey: requireVar(env, id, vendorSpec('gemini')!.keyEnv),
          baseURL: firstSet(env, vendorSpec('gemini')!.baseUrlEnv),
        });
    }
  }
}
