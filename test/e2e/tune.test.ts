/**
 * `assay tune` as a user runs it, on the reply-tone example under the simulator: the held-out
 * items never reach a run of the search (neither the tuning runs nor the demonstrations), they
 * are scored once at the end, and the report names them by digest and says no improvement when
 * the simulator (which ignores the prompt) makes every candidate tie.
 */
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { EXAMPLES_COLUMN } from '../../shared/sweeps/tune.js';
import type { TuneReport } from '../../shared/sweeps/tune-report.js';
import { assayCli, tempDir } from '../helpers.js';

async function jsonl(file: string): Promise<Record<string, unknown>[]> {
  return (await readFile(file, 'utf8'))
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

/** Every results.jsonl under a folder, with the item ids it holds. */
async function resultIds(dir: string): Promise<{ file: string; ids: string[] }[]> {
  const out: { file: string; ids: string[] }[] = [];
  for (const entry of await readdir(dir, { recursive: true })) {
    if (!entry.endsWith('results.jsonl')) continue;
    const file = join(dir, entry);
    out.push({ file, ids: (await jsonl(file)).map((r) => String(r.itemId)) });
  }
  return out;
}

describe('assay tune, end to end', { timeout: 180_000 }, () => {
  it('tunes reply-tone on the tuning items only and proves it once on the held-out items', async () => {
    const dir = await tempDir('assay-tune-');
    const out = join(dir, 'tune');
    const { stdout } = await assayCli(
      ['tune', 'examples/reply-tone.suite.json', '--simulate', '--out', out, '--seed', '1'],
      dir,
    );
    expect(stdout).toContain('SIMULATED');
    expect(stdout).toContain('Held out (accuracy, scored once): fewshot against the original judge');

    const files = await readdir(out);
    for (const file of ['report.json', 'report.txt', 'data', 'prompts', 'tuning-1', 'tuning-2', 'held-out'])
      expect(files).toContain(file);
    const report = JSON.parse(await readFile(join(out, 'report.json'), 'utf8')) as TuneReport;

    // The split: 48 labelled replies, 30% held out (14), the rest tuned on.
    const heldOut = (await jsonl(join(out, 'data', 'held-out.jsonl'))).map((r) => String(r.id));
    const tuning = (await jsonl(join(out, 'data', 'tuning-1.jsonl'))).map((r) => String(r.id));
    expect(heldOut).toHaveLength(14);
    expect(tuning).toHaveLength(34);
    expect(tuning.filter((id) => heldOut.includes(id))).toEqual([]);
    const digest = createHash('sha256')
      .update([...heldOut].sort().join('\n'))
      .digest('hex');
    expect(report.heldOutDigest).toBe(`sha256:${digest}`);
    expect(report).toMatchObject({ labelled: 48, tuningN: 34, simulated: true, seed: 1 });

    // No run of the search read a held-out item; the held-out runs read exactly those.
    const searched = [
      ...(await resultIds(join(out, 'tuning-1'))),
      ...(await resultIds(join(out, 'tuning-2'))),
    ];
    expect(searched).toHaveLength(3); // the original judge in round 1; it and the few-shot prompt in round 2
    for (const { ids } of searched) {
      expect(ids.filter((id) => heldOut.includes(id))).toEqual([]);
      expect([...ids].sort()).toEqual([...tuning].sort());
    }
    const proof = await resultIds(join(out, 'held-out'));
    expect(proof).toHaveLength(2);
    for (const { ids } of proof) expect([...ids].sort()).toEqual([...heldOut].sort());

    // The candidate prompt: a content-hashed file beside the original, demonstrations in a data section.
    const fewshot = report.candidates.find((c) => c.name === 'fewshot')!;
    expect(fewshot.prompt!.path).toMatch(/^tone\.fewshot-[0-9a-f]{8}\.md$/);
    const promptText = await readFile(join(out, 'prompts', fewshot.prompt!.path), 'utf8');
    expect(promptText).toContain(`<examples>\n{${EXAMPLES_COLUMN}}\n</examples>`);
    expect(
      promptText.startsWith(await readFile(join(out, 'prompts', 'tone.md'), 'utf8').then((t) => t.trimEnd())),
    ).toBe(true);
    // Its demonstrations are tuning items, and no held-out reply is in them or in the prompt.
    expect(fewshot.demonstrations!.length).toBeGreaterThan(0);
    expect(fewshot.demonstrations!.every((id) => tuning.includes(id))).toBe(true);
    const shown = String((await jsonl(join(out, 'data', 'tuning-2.jsonl')))[0]![EXAMPLES_COLUMN]);
    const rows = await jsonl(join(out, 'data', 'held-out.jsonl'));
    for (const row of rows) {
      expect(shown).not.toContain(String(row.reply));
      expect(promptText).not.toContain(String(row.reply));
    }

    // The simulator ignores the prompt: every candidate ties, and nothing is claimed.
    expect(report.improved).toBe(false);
    expect(report.tunedPrompt).toBeNull();
    expect(report.heldOut).toMatchObject({ n: 14, delta: { value: 0 }, pValue: 1 });
    expect(report.heldOut.before).toBe(report.heldOut.after);
    expect(report.heldOut.delta.ci).toHaveLength(2);
    expect(await readFile(join(out, 'report.txt'), 'utf8')).toContain('no improvement on held-out');

    // Another seed, another split.
    const other = join(dir, 'tune-2');
    await assayCli(
      ['tune', 'examples/reply-tone.suite.json', '--simulate', '--out', other, '--seed', '2'],
      dir,
    );
    const second = JSON.parse(await readFile(join(other, 'report.json'), 'utf8')) as TuneReport;
    expect(second.heldOutDigest).not.toBe(report.heldOutDigest);
  });

  it("a suite's declared variants are candidates of the first round", async () => {
    const dir = await tempDir('assay-tune-');
    const out = join(dir, 'tune');
    await assayCli(['tune', 'examples/reply-tone-prompts.suite.json', '--simulate', '--out', out], dir);
    const report = JSON.parse(await readFile(join(out, 'report.json'), 'utf8')) as TuneReport;
    expect(report.original.name).toBe('v1');
    expect(report.candidates.map((c) => [c.name, c.round])).toEqual([
      ['v2', 1],
      ['fewshot', 2],
    ]);
    expect(report.candidates[0]!.prompt!.path).toBe('tone-v2.md');
    expect(report.improved).toBe(false);
  });
});
