import { describe, expect, it } from 'vitest';
import { EMBEDDED_PRICES } from '../../../shared/lib/providers/pricing.js';
import { SIM_NO_ANSWER, SimProvider, seededRandom } from '../../../shared/lib/providers/sim.js';
import type { CompletionRequest, Simulator } from '../../../shared/model/provider.js';

/** A family-like simulator: the hint's gold label, or a wrong one with probability `noise`. */
const simulator: Simulator = (hint, rng, noise) => {
  if (hint.family === 'echo') return String(hint.text);
  const gold = String(hint.gold);
  return JSON.stringify({ label: rng() < noise ? (gold === 'TP' ? 'FP1' : 'TP') : gold, r: rng() });
};

/** One request about one item: the hint names the item, as a family's hints do. */
const ask = (prompt: string): CompletionRequest => ({
  model: 'gold',
  prompt,
  simulation: { family: 'test', gold: 'TP', item: prompt },
});

describe('SimProvider', () => {
  it('is simulated, free, and named sim:<name>', async () => {
    const sim = new SimProvider('gold', { latencyMs: 0 }, { simulator });

    const completion = await sim.complete(ask('item 1'));

    expect(sim.id).toBe('sim:gold');
    expect(sim.simulated).toBe(true);
    expect(completion).toMatchObject({ simulated: true, cached: false, costUsd: 0, providerId: 'sim:gold' });
    expect(completion.finishReason).toBe('stop');
  });

  it("named after a real model, it projects that model's price from its simulated tokens", async () => {
    const sim = new SimProvider('gpt-4o-mini', { latencyMs: 0 }, { simulator });
    const completion = await sim.complete({ ...ask('item 1'), model: 'gpt-4o-mini' });
    const { input, output } = completion.usage;
    const price = EMBEDDED_PRICES.models['openai:gpt-4o-mini']!;
    expect(completion.simulated).toBe(true);
    expect(completion.costUsd).toBeCloseTo((input * price.input + output * price.output) / 1e6, 12);
    expect(completion.costUsd).toBeGreaterThan(0);
  });

  it('gives the same answer to the same request, in any order', async () => {
    const a = new SimProvider('gold', { latencyMs: 0, seed: 7, noise: 0.5 }, { simulator });
    const b = new SimProvider('gold', { latencyMs: 0, seed: 7, noise: 0.5 }, { simulator });
    const prompts = Array.from({ length: 20 }, (_, i) => `item ${i}`);

    const forward = await Promise.all(prompts.map((p) => a.complete(ask(p))));
    const backward = await Promise.all([...prompts].reverse().map((p) => b.complete(ask(p))));

    expect(forward.map((c) => c.text)).toEqual(backward.reverse().map((c) => c.text));
  });

  it('answers differently under another seed', async () => {
    const texts = async (seed: number) => {
      const sim = new SimProvider('gold', { latencyMs: 0, seed, noise: 0.5 }, { simulator });
      return Promise.all(
        Array.from({ length: 10 }, (_, i) => sim.complete(ask(`item ${i}`)).then((c) => c.text)),
      );
    };

    expect(await texts(1)).not.toEqual(await texts(2));
  });

  it('honours the noise rate over 1000 items', async () => {
    const sim = new SimProvider('gold', { latencyMs: 0, noise: 0.2, seed: 11 }, { simulator });

    const completions = await Promise.all(
      Array.from({ length: 1000 }, (_, i) => sim.complete(ask(`item ${i}`))),
    );
    const wrong = completions.filter((c) => JSON.parse(c.text).label !== 'TP').length;

    // Binomial(1000, 0.2): sd ≈ 12.6, so ±50 is ~4 sd.
    expect(wrong).toBeGreaterThan(150);
    expect(wrong).toBeLessThan(250);
  });

  it("draws from what the request is about, not the prompt's wording", async () => {
    const sim = new SimProvider('gold', { latencyMs: 0, noise: 0.5 }, { simulator });
    const texts = await Promise.all(
      ['Judge this.', 'Judge this, please, carefully.'].map((prompt) =>
        sim.complete({ model: 'gold', prompt, simulation: { family: 'test', gold: 'TP', item: 'i1' } }),
      ),
    );
    expect(texts[0]!.text).toBe(texts[1]!.text);
  });

  it('answers a fixed error JSON when the request carries no simulation hint', async () => {
    const sim = new SimProvider('gold', { latencyMs: 0 }, { simulator });

    const completion = await sim.complete({ model: 'gold', prompt: 'x' });

    expect(completion.text).toBe(SIM_NO_ANSWER);
    expect(JSON.parse(completion.text)).toEqual({ error: 'simulator has no answer for this request' });
  });

  it('counts usage as ceil(chars / 4)', async () => {
    const sim = new SimProvider('gold', { latencyMs: 0 }, { simulator });

    const completion = await sim.complete({
      model: 'gold',
      system: 'abcd',
      prompt: 'efghi',
      simulation: { family: 'echo', text: 'xyz' },
    });

    expect(completion.usage).toEqual({ input: 3, output: 1, cached: 0 });
  });

  it('waits the configured latency within ±50 %, drawn from the seeded rng', async () => {
    const waits: number[] = [];
    const sim = new SimProvider(
      'gold',
      { latencyMs: 100 },
      {
        simulator,
        sleep: async (ms) => {
          waits.push(ms);
        },
      },
    );

    await Promise.all(Array.from({ length: 50 }, (_, i) => sim.complete(ask(`item ${i}`))));
    await sim.complete(ask('item 0'));

    expect(Math.min(...waits)).toBeGreaterThanOrEqual(50);
    expect(Math.max(...waits)).toBeLessThan(150);
    expect(waits.at(-1)).toBe(waits[0]);
  });

  it('reports the latency it drew, not the time the wait took', async () => {
    const waits: number[] = [];
    // A wait that returns at once: a loaded machine would make it longer, neither may show.
    const sim = new SimProvider(
      'gold',
      { latencyMs: 100 },
      {
        simulator,
        sleep: async (ms) => {
          waits.push(ms);
        },
      },
    );

    const completions = await Promise.all(
      Array.from({ length: 20 }, (_, i) => sim.complete(ask(`item ${i}`))),
    );
    const again = await sim.complete(ask('item 3'));

    expect(completions.map((c) => c.latencyMs)).toEqual(waits.slice(0, 20));
    expect(again.latencyMs).toBe(completions[3]!.latencyMs);
    expect(Math.min(...waits)).toBeGreaterThanOrEqual(50);
  });

  it('seededRandom is uniform enough on [0, 1)', () => {
    const rng = seededRandom('x');
    const draws = Array.from({ length: 10_000 }, rng);

    expect(Math.min(...draws)).toBeGreaterThanOrEqual(0);
    expect(Math.max(...draws)).toBeLessThan(1);
    expect(draws.reduce((s, d) => s + d, 0) / draws.length).toBeCloseTo(0.5, 1);
  });
});
