/**
 * The dated price table: an embedded default (`prices.json`) that a user file can override
 * model by model. Cost is computed from normalised token usage, never taken from a vendor.
 */
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { ConfigError } from '../../model/errors.js';
import type { TokenUsage } from '../../model/provider.js';
import { resolveProviderId } from '../../model/provider-ids.js';
import embedded from './prices.json' with { type: 'json' };

const ModelPriceSchema = z.strictObject({
  /** USD per 1M input tokens not served from cache. */
  input: z.number().nonnegative(),
  /** USD per 1M cache-read input tokens; defaults to `input`. */
  cachedInput: z.number().nonnegative().optional(),
  /** USD per 1M output tokens (reasoning/thinking tokens included). */
  output: z.number().nonnegative(),
});

const PriceTableSchema = z.strictObject({
  asOf: z.string().regex(/^\d{4}-\d{2}-\d{2}$/, 'asOf must be a YYYY-MM-DD date'),
  currency: z.literal('USD'),
  unit: z.literal('per 1M tokens'),
  notes: z.string().optional(),
  models: z.record(z.string().regex(/^[a-z0-9_-]+:.+$/, 'model keys are vendor:model ids'), ModelPriceSchema),
});

/** Same shape, every field optional but `models`; a model's fields merge over the embedded ones. */
const PriceOverrideSchema = z.strictObject({
  asOf: PriceTableSchema.shape.asOf.optional(),
  currency: PriceTableSchema.shape.currency.optional(),
  unit: PriceTableSchema.shape.unit.optional(),
  notes: z.string().optional(),
  models: z.record(z.string().regex(/^[a-z0-9_-]+:.+$/), ModelPriceSchema.partial()),
});

export type ModelPrice = z.infer<typeof ModelPriceSchema>;
export type PriceTable = z.infer<typeof PriceTableSchema>;
export type PriceOverride = z.infer<typeof PriceOverrideSchema>;

export class PriceTableError extends ConfigError {
  override readonly name = 'PriceTableError';
}

/** The table shipped with the product. */
export const EMBEDDED_PRICES: PriceTable = PriceTableSchema.parse(embedded);

/**
 * Merges an override over a table: models are merged field by field (an override may change
 * only `output`), new models are added, and `asOf` becomes the override's when it has one.
 * A new model must give at least `input` and `output`.
 */
export function mergePrices(base: PriceTable, override: PriceOverride): PriceTable {
  const models: Record<string, ModelPrice> = { ...base.models };
  for (const [id, price] of Object.entries(override.models)) {
    const merged = { ...models[id], ...price };
    if (merged.input === undefined || merged.output === undefined) {
      throw new PriceTableError(`price override for ${id} needs both input and output (it is a new model)`);
    }
    models[id] = { ...merged, input: merged.input, output: merged.output };
  }
  return {
    asOf: override.asOf ?? base.asOf,
    currency: 'USD',
    unit: 'per 1M tokens',
    notes: override.notes ?? base.notes,
    models,
  };
}

/**
 * The embedded table, with the override file merged over it when one is given: explicitly
 * (`overridePath`), else from env `ASSAY_PRICES`. Throws {@link PriceTableError} naming the file
 * when it cannot be read or does not have the table's shape.
 */
export function loadPriceTable(overridePath?: string, env: NodeJS.ProcessEnv = process.env): PriceTable {
  const path = overridePath ?? (env.ASSAY_PRICES || undefined);
  if (path === undefined) return EMBEDDED_PRICES;
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, 'utf8'));
  } catch (cause) {
    throw new PriceTableError(`cannot read price override ${path}: ${(cause as Error).message}`, { cause });
  }
  const parsed = PriceOverrideSchema.safeParse(raw);
  if (!parsed.success) {
    throw new PriceTableError(
      `price override ${path} is not a price table: ${z.prettifyError(parsed.error)}`,
    );
  }
  return mergePrices(EMBEDDED_PRICES, parsed.data);
}

export interface Cost {
  usd: number;
  /** False when the table has no price for the model (the report lists these). */
  priced: boolean;
}

/**
 * The real model a simulated one stands in for (`sim:gpt-4o-mini` → `openai:gpt-4o-mini`), or
 * undefined when the name is not a model (`sim:gold`).
 */
function standIn(simId: string): string | undefined {
  try {
    return resolveProviderId(simId.slice('sim:'.length)).id;
  } catch {
    return undefined;
  }
}

/**
 * Cost of one call: cached input tokens at `cachedInput`, the rest of the input at `input`,
 * output at `output`. A simulated call (`sim:`) is priced as the real model it is named after
 * (a projection of what the run would cost; the report says SIMULATED), else it is free; either
 * way it counts as priced.
 */
export function costOf(table: PriceTable, providerId: string, usage: TokenUsage): Cost {
  if (providerId.startsWith('sim:')) {
    const real = standIn(providerId);
    return { usd: real && table.models[real] ? costOf(table, real, usage).usd : 0, priced: true };
  }
  // A local model (an ONNX encoder) costs nothing per call.
  if (providerId.startsWith('onnx:')) return { usd: 0, priced: true };
  const price = table.models[providerId];
  if (!price) return { usd: 0, priced: false };
  const cached = Math.min(Math.max(usage.cached, 0), usage.input);
  const fresh = usage.input - cached;
  const usd =
    (fresh * price.input + cached * (price.cachedInput ?? price.input) + usage.output * price.output) /
    1_000_000;
  return { usd, priced: true };
}
