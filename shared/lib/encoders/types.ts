/**
 * Encoders: the models a scorer runs beside the LLMs — sentence embedders and NLI
 * (entailment / contradiction) classifiers. One interface each, with interchangeable backends:
 * provider embedding APIs (OpenAI, Gemini) through their SDKs, local ONNX models, and a
 * simulator. Ids are `vendor:model` like LLM backends: `openai:text-embedding-3-small`,
 * `gemini:gemini-embedding-001`, `onnx:models/all-MiniLM-L6-v2` (a folder, or
 * `onnx:s3://bucket/prefix`), `sim:embed`, `sim:nli`.
 */

/** What one encoder call spent: booked to the item's stage like an LLM call. */
export interface EncoderSpend {
  /** Input tokens (provider APIs count them; local models count their own tokenizer's). */
  tokens: number;
  costUsd: number;
  /** False when the price table has no price for the model (`costUsd` is then unknown). Absent: priced. */
  priced?: false;
  latencyMs: number;
}

export interface Embedder {
  readonly id: string;
  readonly simulated: boolean;
  /** One vector per text, in order. */
  embed(texts: readonly string[]): Promise<{ vectors: number[][]; spend: EncoderSpend }>;
}

/** A premise and a hypothesis: does the premise contradict the hypothesis? */
export interface NliPair {
  premise: string;
  hypothesis: string;
}

export interface NliModel {
  readonly id: string;
  readonly simulated: boolean;
  /** The probability that each premise contradicts its hypothesis, in order. */
  contradiction(pairs: readonly NliPair[]): Promise<{ probabilities: number[]; spend: EncoderSpend }>;
}

export type EncoderKind = 'embed' | 'nli';
