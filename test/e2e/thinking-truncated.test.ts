/**
 * A thinking model whose output budget went to its thoughts: gemini-2.5-pro answers
 * `finishReason: MAX_TOKENS` with no parts. Through the CLI and the real Gemini SDK against the
 * vendor fake, the item fails as truncated, saying the budget was spent on thinking, and no
 * repair call is made (it would end the same way); the other item is scored as usual.
 */
import { execFile } from 'node:child_process';
import { cp, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GEMINI_THINKING_BUDGET } from '../../shared/lib/providers/gemini.js';
import { startVendorFake, type VendorFake } from '../fakes/vendor-fake.js';
import { REPO, tempDir } from '../helpers.js';

const THOUGHT_OUT = JSON.stringify({
  candidates: [{ content: { role: 'model' }, finishReason: 'MAX_TOKENS', index: 0 }],
  usageMetadata: { promptTokenCount: 300, totalTokenCount: 1_324, thoughtsTokenCount: 1_024 },
  modelVersion: 'gemini-2.5-pro',
  responseId: 'thought-out',
});

let fake: VendorFake;
beforeAll(async () => {
  fake = await startVendorFake((call) =>
    call.promptText.includes('tracking number')
      ? { rawBody: THOUGHT_OUT }
      : { text: '{"label":"neutral","reason":"matter-of-fact"}' },
  );
});
afterAll(() => fake.close());

describe('an answer spent on thinking', { timeout: 120_000 }, () => {
  it('fails its item as truncated with no repair call', async () => {
    const dir = await tempDir('assay-thinking-');
    await mkdir(join(dir, 'prompts'));
    await cp(join(REPO, 'examples', 'prompts', 'tone.md'), join(dir, 'prompts', 'tone.md'));
    await writeFile(
      join(dir, 'replies.csv'),
      [
        'id,customer_message,reply,human',
        'r01,Where is my order?,It shipped this morning; the tracking number is 1Z88A0471.,neutral',
        'r02,How do I reset my password?,Click Forgot password on the sign-in page.,neutral',
      ].join('\n'),
    );
    await writeFile(
      join(dir, 'suite.json'),
      JSON.stringify({
        version: 1,
        name: 'thinking',
        task: 'judge',
        dataset: { path: 'replies.csv', columns: { gold: 'human' } },
        judge: { prompt: 'prompts/tone.md', labels: ['polite', 'neutral', 'rude'] },
        backends: ['gemini:gemini-2.5-pro'],
        params: { maxTokens: 200 },
      }),
    );
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [join(REPO, 'bin', 'assay.mjs'), 'run', 'suite.json', '--out', 'run', '--no-progress'],
      { cwd: dir, env: { ...process.env, ...fake.env, ASSAY_CACHE_DIR: join(dir, 'cache') } },
    );

    expect(stdout).toContain('thinking: 1 scored, 1 failed');
    // One call per item: no repair pass after the answer spent on thinking.
    expect(fake.requests).toHaveLength(2);
    for (const request of fake.requests) {
      expect(request.body.generationConfig).toMatchObject({
        thinkingConfig: { thinkingBudget: GEMINI_THINKING_BUDGET },
        maxOutputTokens: 200 + GEMINI_THINKING_BUDGET,
      });
    }
    const results = (await readFile(join(dir, 'run', 'results.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    const failed = results.filter((r) => r.status === 'failed');
    expect(failed).toHaveLength(1);
    expect(failed[0].failure.kind).toBe('truncated');
    expect(failed[0].failure.message).toContain('output budget was spent on thinking');
    expect(Object.keys(failed[0].stages)).not.toContain('judge.repair');
  });
});
