/**
 * Spend bounded by the deployment, whatever the suite says: a suite's run.prices may add a
 * price for a model the deployment lacks but never change one it has; a run's budget is capped;
 * only the models the deployment allows are called (every variant's backends and encoders).
 */
import { describe, expect, it } from 'vitest';
import { DEPLOY_ENV, deployLimitsFromEnv } from '../../functions/deploy-env.js';
import {
  costOf,
  EMBEDDED_PRICES,
  honouredPrices,
  ignoredPricesNote,
  requirePricedBackends,
  withSuitePrices,
} from '../../shared/lib/providers/pricing.js';
import type { RunRecord } from '../../shared/model/model.js';
import { validateSuite } from '../../shared/registry/suite.js';
import { deployLimited } from '../../shared/use-cases/deploy-limits.js';
import { runPrices } from '../../shared/use-cases/score-item.js';
import { suite } from '../helpers.js';

const GPT4O = EMBEDDED_PRICES.models['openai:gpt-4o']!;
const FREE_GPT4O = { models: { 'openai:gpt-4o': { input: 0, output: 0 } } };
const FINETUNE = { 'openai:my-finetune': { input: 0.3, output: 1.2 } };
const USAGE = { input: 1_000, output: 400, cached: 0 };

describe("the price rule: a deployment's price wins over the suite's", () => {
  it('under `add`, drops an entry for a model the table prices (lower, equal or higher) and keeps a new one', () => {
    const honoured = honouredPrices(
      EMBEDDED_PRICES,
      {
        asOf: '2020-01-01',
        models: {
          'openai:gpt-4o': { input: 0, output: 0 },
          'openai:gpt-4o-mini': { input: 99, output: 99 },
          ...FINETUNE,
        },
      },
      'add',
      'run.prices',
    );
    expect(honoured.ignored).toEqual(['openai:gpt-4o', 'openai:gpt-4o-mini']);
    expect(honoured.prices).toEqual({ models: FINETUNE });
    const table = withSuitePrices(
      EMBEDDED_PRICES,
      { models: { ...FREE_GPT4O.models, ...FINETUNE } },
      'add',
      'x',
    );
    expect(table.models['openai:gpt-4o']).toEqual(GPT4O);
    expect(table.models['openai:my-finetune']).toEqual(FINETUNE['openai:my-finetune']);
    // The table's date stays: the suite dates only what it adds.
    expect(withSuitePrices(EMBEDDED_PRICES, { asOf: '2020-01-01', models: FINETUNE }, 'add', 'x').asOf).toBe(
      EMBEDDED_PRICES.asOf,
    );
  });

  it('under `override` (a local run), the suite prices its models as it likes', () => {
    expect(honouredPrices(EMBEDDED_PRICES, FREE_GPT4O, 'override', 'x')).toEqual({
      prices: FREE_GPT4O,
      ignored: [],
    });
    const table = withSuitePrices(EMBEDDED_PRICES, FREE_GPT4O, 'override', 'x');
    expect(costOf(table, 'openai:gpt-4o', USAGE).usd).toBe(0);
    expect(withSuitePrices(EMBEDDED_PRICES, undefined, 'add', 'x')).toBe(EMBEDDED_PRICES);
  });

  it("prices a simulated model as the deployment's real one, whatever the suite says", () => {
    const table = withSuitePrices(EMBEDDED_PRICES, FREE_GPT4O, 'add', 'x');
    const expected = (USAGE.input * GPT4O.input + USAGE.output * GPT4O.output) / 1e6;
    expect(costOf(table, 'sim:gpt-4o', USAGE).usd).toBeCloseTo(expected, 12);
    expect(costOf(table, 'sim:gpt-4o', USAGE).usd).toBeGreaterThan(0);
  });

  it("projects a run's budget at the rule's prices", () => {
    const run = { suite: suite({ run: { budgetUsd: 1, prices: FREE_GPT4O } }) } as RunRecord;
    expect(runPrices(EMBEDDED_PRICES, run, 'add').models['openai:gpt-4o']).toEqual(GPT4O);
    expect(runPrices(EMBEDDED_PRICES, run, 'override').models['openai:gpt-4o']).toMatchObject({
      input: 0,
      output: 0,
    });
    expect(runPrices(EMBEDDED_PRICES, run).models['openai:gpt-4o']).toMatchObject({ input: 0, output: 0 });
  });

  it('names a malformed run.prices under either rule, and needs a price for a budgeted backend', () => {
    expect(() =>
      honouredPrices(EMBEDDED_PRICES, { models: { x: 1 } }, 'add', "the suite's run.prices"),
    ).toThrow(/the suite's run.prices is not a price table/);
    const unpriced = suite({ backends: ['openai:my-finetune'], run: { budgetUsd: 1 } });
    expect(() => requirePricedBackends(unpriced, EMBEDDED_PRICES, 'add')).toThrow(
      /openai:my-finetune has no price/,
    );
    const added = suite({
      backends: ['openai:my-finetune'],
      run: { budgetUsd: 1, prices: { models: FINETUNE } },
    });
    expect(() => requirePricedBackends(added, EMBEDDED_PRICES, 'add')).not.toThrow();
  });
});

/** The suite deployLimited lets run, or the test fails with its refusal. */
function limitedSuite(result: ReturnType<typeof deployLimited>) {
  if ('rejected' in result) throw new Error(`refused: ${result.rejected}`);
  return result.suite;
}

describe('deployLimited: prices, budgets and models', () => {
  it("keeps only the suite's prices for models the deployment lacks, and notes the ones it overruled", () => {
    const limited = limitedSuite(
      deployLimited(
        suite({
          backends: ['sim:gpt-4o'],
          run: { prices: { notes: 'ours', models: { ...FREE_GPT4O.models, ...FINETUNE } } },
        }),
        {},
      ),
    );
    expect(limited.run.prices?.models).toEqual(FINETUNE);
    expect(limited.run.prices?.notes).toBe(`ours — ${ignoredPricesNote(['openai:gpt-4o'])}`);
    expect(limited.run.prices?.notes).toMatch(
      /this deployment prices openai:gpt-4o itself: the suite's run.prices for it was ignored/,
    );
    // Prices it does not overrule are kept as they are.
    const kept = limitedSuite(deployLimited(suite({ run: { prices: { models: FINETUNE } } }), {}));
    expect(kept.run.prices).toEqual({ models: FINETUNE });
  });

  it("drops a variant's own prices for a model the deployment prices, listed or from the matrix", () => {
    const sweep = suite({
      backends: ['sim:gpt-4o'],
      variants: [{ name: 'free', options: { run: { prices: FREE_GPT4O } } }, { name: 'plain' }],
      matrix: { options: { run: [{ prices: FREE_GPT4O }, { concurrency: 2 }] } },
    });
    const limited = limitedSuite(deployLimited(sweep, {}));
    const options = limited.variants![0]!.options as { run: { prices: { models: object; notes: string } } };
    expect(options.run.prices.models).toEqual({});
    expect(options.run.prices.notes).toMatch(/openai:gpt-4o/);
    const matrixRuns = limited.matrix!.options!.run as { prices?: { models: object } }[];
    expect(matrixRuns[0]!.prices!.models).toEqual({});
    expect(matrixRuns[1]).toEqual({ concurrency: 2 });
  });

  it('refuses a budget above maxRunBudgetUsd, in the suite or in a variant', () => {
    expect(deployLimited(suite({ run: { budgetUsd: 5000 } }), { maxRunBudgetUsd: 1000 })).toEqual({
      rejected:
        "run.budgetUsd $5000 is above this deployment's maxRunBudgetUsd ($1000): lower it, or deploy with a higher maxRunBudgetUsd",
    });
    const sweep = suite({
      run: { budgetUsd: 10 },
      variants: [{ name: 'cheap' }, { name: 'lavish', options: { run: { budgetUsd: 2000 } } }],
    });
    expect(deployLimited(sweep, { maxRunBudgetUsd: 1000 })).toEqual({
      rejected: expect.stringMatching(
        /^run\.budgetUsd \$2000 \(in test-suite\.lavish\) is above .*maxRunBudgetUsd \(\$1000\)/,
      ),
    });
    expect(
      limitedSuite(deployLimited(suite({ run: { budgetUsd: 1000 } }), { maxRunBudgetUsd: 1000 })).run
        .budgetUsd,
    ).toBe(1000);
  });

  it('gives a run without a budget the default, held to the maximum, else the maximum', () => {
    const budgetOf = (limits: Parameters<typeof deployLimited>[1]) =>
      limitedSuite(deployLimited(suite(), limits)).run.budgetUsd;
    expect(budgetOf({ defaultBudgetUsd: 100, maxRunBudgetUsd: 1000 })).toBe(100);
    expect(budgetOf({ defaultBudgetUsd: 5000, maxRunBudgetUsd: 1000 })).toBe(1000);
    expect(budgetOf({ maxRunBudgetUsd: 1000 })).toBe(1000);
    expect(budgetOf({})).toBeUndefined();
  });

  it('refuses a model the deployment does not price (the default allow-list), even when the suite prices it', () => {
    const finetune = suite({ backends: ['openai:my-finetune'], run: { prices: { models: FINETUNE } } });
    expect(deployLimited(finetune, {})).toEqual({
      rejected: expect.stringMatching(
        /^backend openai:my-finetune is not a model this deployment allows \(allowedModels: the models its price table prices\): use one it allows, or deploy with openai:my-finetune in allowedModels/,
      ),
    });
    // Allowed by name, the suite's price for it applies.
    const allowed = limitedSuite(
      deployLimited(finetune, { allowedModels: ['openai:my-finetune', 'openai:gpt-4o-mini'] }),
    );
    expect(allowed.run.prices?.models).toEqual(FINETUNE);
    expect(deployLimited(finetune, { allowedModels: 'any' })).toHaveProperty('suite');
    // A priced model outside an explicit list is refused; an alias counts as its model.
    expect(
      deployLimited(suite({ backends: ['openai:gpt-4o'] }), { allowedModels: ['openai:gpt-4o-mini'] }),
    ).toEqual({
      rejected: expect.stringMatching(
        /^backend openai:gpt-4o is not .*\(allowedModels: openai:gpt-4o-mini\)/,
      ),
    });
    expect(
      deployLimited(suite({ backends: ['gpt-4o-mini'] }), { allowedModels: ['openai:gpt-4o-mini'] }),
    ).toHaveProperty('suite');
  });

  it("checks every variant's backends, listed and from the matrix; the simulator is always allowed", () => {
    const listed = suite({
      backends: ['openai:gpt-4o-mini'],
      variants: [{ name: 'mini' }, { name: 'tuned', backends: ['openai:my-finetune'] }],
    });
    expect(deployLimited(listed, {})).toEqual({
      rejected: expect.stringMatching(/^backend openai:my-finetune \(in test-suite\.tuned\) is not a model/),
    });
    const matrix = suite({
      backends: ['openai:gpt-4o-mini'],
      matrix: { backends: [['openai:gpt-4o'], ['anthropic:claude-haiku-4-5'], ['ollama:llama3']] },
    });
    expect(deployLimited(matrix, {})).toEqual({
      rejected: expect.stringMatching(/^backend ollama:llama3 \(in test-suite\.llama3\) is not a model/),
    });
    // A sweep runs its variants only: the suite's own backends are not called.
    expect(
      deployLimited(matrix, {
        allowedModels: ['openai:gpt-4o', 'anthropic:claude-haiku-4-5', 'ollama:llama3'],
      }),
    ).toHaveProperty('suite');
    const simulated = suite({
      backends: ['sim:gold'],
      variants: [{ name: 'a', backends: ['sim:my-finetune'] }, { name: 'b' }],
    });
    expect(deployLimited(simulated, { allowedModels: [] as string[] })).toHaveProperty('suite');
  });

  it('checks the paid encoders a suite scores with; local and simulated ones are always allowed', () => {
    const summarization = (embedder: string) =>
      validateSuite(
        {
          version: 1,
          name: 'summaries',
          task: 'summarization',
          dataset: { path: 'data.jsonl' },
          backends: ['sim:gold'],
          summarization: { against: 'reference', embedder, nli: 'llm' },
        },
        'test suite',
      );
    expect(deployLimited(summarization('openai:text-embedding-3-small'), {})).toHaveProperty('suite');
    expect(
      deployLimited(summarization('sim:text-embedding-3-small'), { allowedModels: [] as string[] }),
    ).toHaveProperty('suite');
    expect(
      deployLimited(summarization('openai:text-embedding-3-small'), { allowedModels: ['openai:gpt-4o'] }),
    ).toEqual({
      rejected: expect.stringMatching(
        /^embedder openai:text-embedding-3-small is not a model this deployment allows/,
      ),
    });
  });
});

describe('the deployment settings as the functions read them', () => {
  it('reads the budget maximum and the allow-list, and names a malformed one', () => {
    expect(
      deployLimitsFromEnv({
        [DEPLOY_ENV.maxRunBudgetUsd]: '250',
        [DEPLOY_ENV.allowedModels]: 'openai:gpt-4o-mini, anthropic:claude-haiku-4-5',
      }),
    ).toEqual({ maxRunBudgetUsd: 250, allowedModels: ['openai:gpt-4o-mini', 'anthropic:claude-haiku-4-5'] });
    expect(deployLimitsFromEnv({ [DEPLOY_ENV.allowedModels]: '*' }).allowedModels).toBe('any');
    // Unset or empty: the models the price table prices; 0: no maximum.
    expect(
      deployLimitsFromEnv({ [DEPLOY_ENV.allowedModels]: '', [DEPLOY_ENV.maxRunBudgetUsd]: '0' }),
    ).toEqual({});
    expect(() => deployLimitsFromEnv({ [DEPLOY_ENV.allowedModels]: 'gpt-4o' })).toThrow(
      /ASSAY_ALLOWED_MODELS must be vendor:model ids.*"gpt-4o"/,
    );
    expect(() => deployLimitsFromEnv({ [DEPLOY_ENV.maxRunBudgetUsd]: 'lots' })).toThrow(
      /ASSAY_MAX_RUN_BUDGET_USD/,
    );
  });
});
