/**
 * A suite pricing gpt-4o at 0/0 in run.prices, as a user runs it (a stand-in answers for
 * OpenAI's API): `assay cloud` (the real handlers over moto) prices it at the deployment's prices, so its $0.01 budget stops it after a
 * few of its 16 items and the report says the suite's price was ignored; `assay run` honours the
 * suite's prices, and its report says which prices came from the suite.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Report } from '../../shared/model/report.js';
import { startVendorFake, type VendorFake } from '../fakes/vendor-fake.js';
import { assayCli, suiteInput, tempDir } from '../helpers.js';

const ITEMS = 16;
let dir: string;
let suitePath: string;
let fake: VendorFake;
/** The CLI's environment: an OpenAI key, and the stand-in's address. */
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  fake = await startVendorFake();
  env = { OPENAI_API_KEY: 'test', ...fake.env };
  dir = await tempDir('assay-deploy-spend-');
  const rows = Array.from({ length: ITEMS }, (_, i) => `${i + 1},I has ${i} cat.,I have ${i} cats.,TP`);
  await writeFile(join(dir, 'gold.csv'), `${['idx,src,tgt,label', ...rows].join('\n')}\n`);
  suitePath = join(dir, 'zero-priced.suite.json');
  await writeFile(
    suitePath,
    JSON.stringify(
      suiteInput({
        name: 'zero-priced',
        dataset: { path: 'gold.csv' },
        // The suite says gpt-4o costs nothing.
        backends: ['openai:gpt-4o'],
        run: { budgetUsd: 0.01, prices: { models: { 'openai:gpt-4o': { input: 0, output: 0 } } } },
      }),
    ),
  );
});

afterAll(async () => {
  await fake?.close();
});

const reportIn = async (out: string) => ({
  json: JSON.parse(await readFile(join(out, 'report.json'), 'utf8')) as Report,
  text: await readFile(join(out, 'report.txt'), 'utf8'),
});

describe("a suite's run.prices at 0/0", { timeout: 240_000 }, () => {
  it("under assay cloud: priced at the deployment's prices, the $0.01 budget stops the run after a few items", async () => {
    const out = join(dir, 'cloud');
    await assayCli(['cloud', suitePath, '--out', out], dir, env);
    const { json, text } = await reportIn(out);
    expect(json.counts.items).toBe(ITEMS);
    expect(json.counts.scored).toBeGreaterThanOrEqual(1);
    expect(json.counts.scored).toBeLessThanOrEqual(4);
    expect(json.counts.byFailure.budget).toBe(ITEMS - json.counts.scored);
    expect(json.cost.totalUsd).toBeGreaterThan(0);
    expect(json.cost.totalUsd).toBeLessThanOrEqual(0.01);
    expect(text).toContain("prices: the price table's for every model");
    expect(text).toContain(
      "prices note: this deployment prices openai:gpt-4o itself: the suite's run.prices for it was ignored",
    );
  });

  it("under assay run: the suite's prices are honoured, and the report says they are the suite's", async () => {
    const out = join(dir, 'local');
    await assayCli(['run', suitePath, '--out', out, '--no-progress'], dir, env);
    const { json, text } = await reportIn(out);
    expect(json.counts.scored).toBe(ITEMS);
    expect(json.cost.totalUsd).toBe(0);
    expect(json.cost.suitePrices).toEqual({ models: ['openai:gpt-4o'] });
    expect(text).toContain(
      "prices: the suite's run.prices for openai:gpt-4o; the price table's for the rest",
    );
    expect(text).not.toContain('prices note');
  });
});
