/**
 * The simulator: a provider that never calls a model. The task family that made the request
 * fabricates a plausible answer from the request's JSON hint (`request.simulation`) and a random
 * source seeded by the request, so a run is reproducible: the same request always gets the same
 * answer, whatever the order or concurrency.
 */
import { createHash } from 'node:crypto';
import type { Completion, CompletionRequest, LlmProvider, Simulator } from '../../model/provider.js';
import { mulberry32 } from '../metrics/stats.js';
import { buildCompletion } from './normalise.js';
import { EMBEDDED_PRICES, type PriceTable } from './pricing.js';
import { defaultSleep, type Sleep } from './retry.js';

export interface SimOptions {
  /** Share of answers the family should make wrong, passed to the simulator. */
  noise: number;
  /**
   * Mean simulated latency; each call draws uniformly within ±50 %, waits that long and reports
   * it as its latency.
   */
  latencyMs: number;
  seed: number;
}

export const DEFAULT_SIM_OPTIONS: SimOptions = { noise: 0.2, latencyMs: 20, seed: 7 };

/** What the simulator answers when the task gave it no way to answer. */
export const SIM_NO_ANSWER = '{"error":"simulator has no answer for this request"}';

/** A uniform [0, 1) generator (mulberry32) seeded from a string's SHA-256. */
export function seededRandom(key: string): () => number {
  return mulberry32(createHash('sha256').update(key).digest().readUInt32LE(0));
}

/** Rough token count for simulated usage: one token per four characters. */
function approxTokens(text: string): number {
  return Math.ceil(text.length / 4);
}

export class SimProvider implements LlmProvider {
  readonly id: string;
  readonly simulated = true;
  private readonly options: SimOptions;

  private readonly simulator: Simulator | undefined;
  private readonly sleep: Sleep;
  /** The table its calls are priced with (a suite's run.prices over the process's): a simulated budget binds as the real one would. */
  private readonly prices: PriceTable;

  /**
   * `name` is the part after `sim:` (e.g. `gold`). `simulator` answers the families' hints
   * (the task registry's `simulateAnswer`); without one every answer is {@link SIM_NO_ANSWER}.
   */
  constructor(
    readonly name: string,
    options: Partial<SimOptions> = {},
    {
      simulator,
      sleep = defaultSleep,
      prices = EMBEDDED_PRICES,
    }: { simulator?: Simulator; sleep?: Sleep; prices?: PriceTable } = {},
  ) {
    this.id = `sim:${name}`;
    this.options = { ...DEFAULT_SIM_OPTIONS, ...options };
    this.simulator = simulator;
    this.sleep = sleep;
    this.prices = prices;
  }

  async complete(request: CompletionRequest, signal?: AbortSignal): Promise<Completion> {
    const model = request.model || this.name;
    // Seeded by what the answer is about (the family's hint: item, backend, stage…) rather than
    // the prompt's wording, so editing a prompt does not reshuffle simulated answers. The system
    // message is wording too (a prompt's instructions): with a hint it is left out.
    const key = JSON.stringify([
      this.options.seed,
      model,
      request.simulation ? '' : (request.system ?? ''),
      request.history ?? [],
      request.simulation ?? request.prompt,
      // A repeated call (sample 2, 3, …) draws its own noise; the first keeps the plain call's.
      ...(request.sample !== undefined && request.sample > 1 ? [request.sample] : []),
    ]);
    // Latency draws from its own stream so that changing latency never changes answers. The
    // drawn latency is what the answer reports, not the time the wait took: a simulated run's
    // latency figures are the same on every machine, however loaded, and in either shell.
    const latencyRng = seededRandom(`${key}#latency`);
    const delay = this.options.latencyMs * (0.5 + latencyRng());
    if (delay > 0) await this.sleep(delay, signal);

    const text =
      request.simulation && this.simulator
        ? this.simulator(request.simulation, seededRandom(key), this.options.noise)
        : SIM_NO_ANSWER;
    const inputText = [
      request.system ?? '',
      ...(request.history ?? []).map((t) => t.content),
      request.prompt,
    ].join('');
    return buildCompletion({
      providerId: `sim:${model}`,
      text,
      finishReason: 'stop',
      usage: { input: approxTokens(inputText), output: approxTokens(text), cached: 0 },
      latencyMs: delay,
      prices: this.prices,
      simulated: true,
    });
  }
}
