/**
 * `assay tune` against a wire-level fake vendor whose judge is right only when its prompt holds
 * the demonstrations: tune finds the few-shot prompt, proves it on the held-out items, writes the
 * tuned prompt; and every request the fake received is checked: a held-out reply is sent twice
 * (the original judge and the winner, once each, at the end), never inside a demonstration.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { escapeData } from '../../shared/lib/prompts/prompts.js';
import type { TuneReport } from '../../shared/sweeps/tune-report.js';
import { startVendorFake, type VendorFake, withoutTagNonces } from '../fakes/vendor-fake.js';
import { assayCli, REPO, tempDir } from '../helpers.js';

/** The reply-tone example's replies (as the renderer escapes them) and their human labels. */
async function goldByReply(): Promise<Map<string, string>> {
  const { readDatasetFile } = await import('../../shared/lib/datasets/source.js');
  const out = new Map<string, string>();
  for await (const row of readDatasetFile(join(REPO, 'examples', 'data', 'replies.csv'), { format: 'csv' }))
    if (row.error === undefined) out.set(escapeData(row.record.reply!).trim(), row.record.human!);
  return out;
}

const section = (text: string, tag: string) =>
  new RegExp(`<${tag}>\\n?([\\s\\S]*?)\\n?</${tag}>`).exec(withoutTagNonces(text))?.[1]?.trim();

let fake: VendorFake;
let gold: Map<string, string>;
beforeAll(async () => {
  gold = await goldByReply();
  // Right on every item when the prompt shows demonstrations; without them, right on neutral replies only.
  fake = await startVendorFake((call) => {
    const text = call.promptText;
    const truth = gold.get(section(text, 'reply') ?? '');
    if (truth === undefined) return undefined;
    const label = section(text, 'examples') !== undefined || truth === 'neutral' ? truth : 'neutral';
    return { text: JSON.stringify({ label, reason: 'fake' }) };
  });
});
afterAll(() => fake.close());

describe('assay tune against a judge the demonstrations help', { timeout: 180_000 }, () => {
  it('finds the improvement, proves it on held-out, and sends no held-out item to the search', async () => {
    const dir = await tempDir('assay-tune-vendor-');
    const out = join(dir, 'tune');
    await assayCli(['tune', 'examples/reply-tone.suite.json', '--out', out, '--seed', '3'], dir, fake.env);
    const report = JSON.parse(await readFile(join(out, 'report.json'), 'utf8')) as TuneReport;
    const requests = [...fake.requests];

    expect(report.simulated).toBe(false);
    expect(report.winner).toBe('fewshot');
    expect(report.heldOut.after).toBe(1);
    expect(report.heldOut.before).toBeLessThan(0.7);
    expect(report.heldOut.pValue).toBeLessThan(0.05);
    expect(report.heldOut.delta.ci![0]).toBeGreaterThan(0);
    expect(report.improved).toBe(true);
    expect(report.tunedPrompt!.path).toMatch(/^prompts\/tone\.tuned-[0-9a-f]{8}\.md$/);
    const tuned = await readFile(join(out, report.tunedPrompt!.path), 'utf8');
    expect(tuned).toContain('<examples>');
    expect(await readFile(join(out, 'report.txt'), 'utf8')).toContain('IMPROVED on held-out');

    // The tuned prompt runs with assay run, on every row, and the run's report names its version.
    expect(report.tunedSuite).toBe('tuned.suite.json');
    const runDir = join(dir, 'tuned-run');
    await assayCli(['run', join(out, 'tuned.suite.json'), '--out', runDir, '--no-progress'], dir, fake.env);
    const run = JSON.parse(await readFile(join(runDir, 'report.json'), 'utf8')) as {
      prompts: Record<string, string>;
      counts: { items: number; scored: number };
    };
    expect(run.prompts[report.tunedPrompt!.path.slice('prompts/'.length)]).toBe(report.tunedPrompt!.hash);
    expect(run.counts).toMatchObject({ items: 48, scored: 48 });

    // Every request the vendor received: which reply it judged, and what its demonstrations showed.
    const heldOut = (await readFile(join(out, 'data', 'held-out.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((line) => escapeData((JSON.parse(line) as { reply: string }).reply).trim());
    expect(heldOut).toHaveLength(14);
    const judged = requests.map((r) => section(r.promptText, 'reply'));
    expect(judged.every((reply) => reply !== undefined)).toBe(true);
    for (const reply of heldOut) expect(judged.filter((j) => j === reply)).toHaveLength(2);
    for (const request of requests) {
      const shown = section(request.promptText, 'examples');
      if (shown === undefined) continue;
      for (const reply of heldOut) expect(shown).not.toContain(reply);
    }
    // The held-out requests came last: the search was over before any held-out item was sent.
    const firstHeldOut = judged.findIndex((j) => heldOut.includes(j!));
    expect(firstHeldOut).toBe(requests.length - 2 * heldOut.length);
  });
});
