/**
 * The dated price table: an embedded default (`prices.json`) that a user file can override
 * model by model. Cost is computed from normalised token usage, never taken from a vendor.
 */
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { ConfigError } from '../../model/errors.js';
import type { CompletionRequest, TokenUsage } from '../../model/provider.js';
import { resolveProviderId } from '../../model/provider-ids.js';
import { matchById } from '../../model/vendors.js';
import embedded from './prices.json' with { type: 'json' };

const ModelPriceSchema = z.strictObject({
  /** USD per 1M input tokens not served from cache. */
  input: z.number().nonnegative(),
  /** USD per 1M cache-read input tokens; defaults to `input`. */
  cachedInput: z.number().nonnegative().optional(),
  /** USD per 1M input tokens written to a five-minute prompt cache entry (Anthropic: 1.25× input); defaults to `input`. */
  cacheWrite5m: z.number().nonnegative().optional(),
  /** USD per 1M input tokens written to a one-hour prompt cache entry (Anthropic: 2× input); defaults to `input`. */
  cacheWrite1h: z.number().nonnegative().optional(),
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

/**
 * The price of a model: its own entry, else the wildcard entry that covers it (`llamacpp:*`
 * prices every model of llama-server, `openai-compatible:local/*` every model of the `local`
 * service); an exact entry wins over a wildcard, and a narrower wildcard over a wider one.
 */
export function priceOf(table: PriceTable, providerId: string): ModelPrice | undefined {
  return matchById(table.models, providerId)?.value;
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
 * Cost of one call: cached input tokens at `cachedInput`, cache writes at `cacheWrite5m` and
 * `cacheWrite1h`, the rest of the input at `input`, output at `output`. A simulated call (`sim:`) is priced as the real model it is named after
 * (a projection of what the run would cost; the report says SIMULATED), else it is free; either
 * way it counts as priced.
 */
export function costOf(table: PriceTable, providerId: string, usage: TokenUsage): Cost {
  if (providerId.startsWith('sim:')) {
    const real = standIn(providerId);
    return { usd: real && priceOf(table, real) ? costOf(table, real, usage).usd : 0, priced: true };
  }
  // A local model (an ONNX encoder) costs nothing per call.
  if (providerId.startsWith('onnx:')) return { usd: 0, priced: true };
  const price = priceOf(table, providerId);
  if (!price) return { usd: 0, priced: false };
  // Each part is a subset of `input`; none may take more than what is left of it.
  let left = Math.max(usage.input, 0);
  const part = (n: number | undefined) => {
    const taken = Math.min(Math.max(n ?? 0, 0), left);
    left -= taken;
    return taken;
  };
  const cached = part(usage.cached);
  const write5m = part(usage.cacheWrite5m);
  const write1h = part(usage.cacheWrite1h);
  const usd =
    (left * price.input +
      cached * (price.cachedInput ?? price.input) +
      write5m * (price.cacheWrite5m ?? price.input) +
      write1h * (price.cacheWrite1h ?? price.input) +
      usage.output * price.output) /
    1_000_000;
  return { usd, priced: true };
}

/**
 * A price override given inline (a suite's `run.prices`, same shape as the override file)
 * merged over a table; `where` names it in the error when it does not have the table's shape.
 */
export function withPriceOverride(table: PriceTable, override: unknown, where: string): PriceTable {
  if (override === undefined) return table;
  const parsed = PriceOverrideSchema.safeParse(override);
  if (!parsed.success) {
    throw new PriceTableError(`${where} is not a price table: ${z.prettifyError(parsed.error)}`);
  }
  return mergePrices(table, parsed.data);
}

/**
 * How a suite's `run.prices` meet the process's table. `override`: the suite's prices win, model
 * by model (a local run: whoever runs it pays, so the suite may price its models as it likes).
 * `add`: the suite may only add a price for a model the table lacks; a model the table prices
 * keeps the table's price (a deployment: the deployment's prices bound the spend of every
 * upload, so an upload cannot make a priced model cheaper, or free, to slip under a budget).
 */
export type SuitePriceRule = 'override' | 'add';

/** A suite's prices as a rule lets them apply: the entries kept, and the models whose entries the table's price overrules. */
export interface HonouredPrices {
  /** The suite's prices that apply; undefined when the suite gave none. */
  prices?: PriceOverride;
  /** Models the suite priced that keep the table's price (always none under `override`). */
  ignored: string[];
}

/**
 * The part of a suite's `run.prices` that applies under `rule` (`where` names it in the error
 * when it does not have the table's shape). Under `add`, an entry for a model `table` already
 * prices is dropped (whatever its figures: lower, higher or equal) and the model is listed in
 * `ignored`.
 */
export function honouredPrices(
  table: PriceTable,
  override: unknown,
  rule: SuitePriceRule,
  where: string,
): HonouredPrices {
  if (override === undefined) return { ignored: [] };
  const parsed = PriceOverrideSchema.safeParse(override);
  if (!parsed.success) {
    throw new PriceTableError(`${where} is not a price table: ${z.prettifyError(parsed.error)}`);
  }
  if (rule === 'override') return { prices: parsed.data, ignored: [] };
  const models: PriceOverride['models'] = {};
  const ignored: string[] = [];
  for (const [id, price] of Object.entries(parsed.data.models)) {
    // A model the table prices under a wildcard is priced too: an exact entry of the suite's
    // would win over it, so it is dropped like any other.
    if (table.models[id] || (!id.endsWith('*') && priceOf(table, id))) ignored.push(id);
    else models[id] = price;
  }
  // The table's date stays: the suite's `asOf` dates only the prices it adds.
  const { asOf: _asOf, ...rest } = parsed.data;
  return { prices: { ...rest, models }, ignored };
}

/** The table with a suite's `run.prices` over it, as `rule` lets them apply (see {@link honouredPrices}). */
export function withSuitePrices(
  table: PriceTable,
  override: unknown,
  rule: SuitePriceRule,
  where: string,
): PriceTable {
  if (override === undefined) return table;
  const { prices } = honouredPrices(table, override, rule, where);
  return prices ? mergePrices(table, prices) : table;
}

/**
 * What a report or a run record says of prices a deployment overruled: the models whose price
 * in the suite's run.prices did not apply, and what applied instead.
 */
export function ignoredPricesNote(ignored: readonly string[]): string {
  return `this deployment prices ${ignored.join(', ')} itself: the suite's run.prices for ${ignored.length === 1 ? 'it was' : 'them were'} ignored (a suite may add a price for a model the deployment does not price, never change one it does)`;
}

/** Input tokens a budget projects for a text before a call: one per four characters, rounded up. */
export function projectedTokens(text: string): number {
  return Math.ceil(text.length / 4);
}

/** Tokens a chat format adds per message (role and framing), projected generously. */
const FRAMING_TOKENS_PER_MESSAGE = 4;

/**
 * Output tokens a budget reserves for a request that sets no `maxTokens` (the model may answer
 * at any length; every family of this repo sets one).
 */
export const UNBOUNDED_OUTPUT_TOKENS = 4_096;

/** What a request may cost at most: its projected input and its maximum output, both as the table prices them. */
export interface ProjectedCost extends Cost {
  tokens: { input: number; output: number };
}

/**
 * The most a call may cost before it is sent: input tokens projected locally
 * ({@link projectedTokens} of every message, plus framing), none of them from the vendor's cache,
 * and the request's maximum output. A run's budget reserves this much before each call. The
 * input projection is an estimate: a call may cost more than this by what the estimate missed.
 */
export function maxCostOf(
  table: PriceTable,
  providerId: string,
  request: Pick<CompletionRequest, 'system' | 'prompt' | 'history' | 'maxTokens'>,
): ProjectedCost {
  const messages = [request.system ?? '', ...(request.history ?? []).map((t) => t.content), request.prompt];
  let input = 0;
  for (const text of messages) input += projectedTokens(text) + FRAMING_TOKENS_PER_MESSAGE;
  const output = request.maxTokens ?? UNBOUNDED_OUTPUT_TOKENS;
  return { ...costOf(table, providerId, { input, output, cached: 0 }), tokens: { input, output } };
}

/**
 * A budget can only hold a run whose calls have a price: a run with `run.budgetUsd` is refused
 * when any backend (resolved ids) has none in `table` with the suite's `run.prices` over it (as
 * `rule` lets them apply), as every such call would count as free. A run without a budget may call an unpriced model; its
 * report says the cost is unpriced.
 */
export function requirePricedBackends(
  suite: { backends: readonly string[]; run: { budgetUsd?: number; prices?: unknown } },
  table: PriceTable,
  rule: SuitePriceRule = 'override',
): void {
  if (suite.run.budgetUsd === undefined) return;
  const prices = withSuitePrices(table, suite.run.prices, rule, "the suite's run.prices");
  const unpriced = suite.backends.filter(
    (backend) => !costOf(prices, resolveProviderId(backend).id, { input: 0, output: 0, cached: 0 }).priced,
  );
  if (unpriced.length === 0) return;
  const ids = unpriced.map((b) => resolveProviderId(b).id);
  throw new PriceTableError(
    `the run has a budget ($${suite.run.budgetUsd}) but ${ids.join(', ')} ${ids.length === 1 ? 'has' : 'have'} no price, so ${ids.length === 1 ? 'its' : 'their'} calls could not be counted against it: add ${ids.length === 1 ? 'its price' : 'their prices'} under run.prices in the suite (e.g. "prices": {"models": {"${ids[0]}": {"input": 0.5, "output": 1.5}}}, USD per 1M tokens) or in a price file given with --prices FILE (or ASSAY_PRICES), or run without run.budgetUsd`,
  );
}
