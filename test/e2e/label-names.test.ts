/**
 * Labels named like the properties every JavaScript object has (`__proto__`, `constructor`), as
 * a user could declare them: `assay run --simulate` on 30 items, 10 of each label, reports every
 * item in report.json's per-class and confusion tables, its label distribution, and report.txt.
 */
import { copyFile, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { assayCli, REPO, tempDir } from '../helpers.js';

const LABELS = ['__proto__', 'constructor', 'yes'];

/** Sums a table's numbers, reading every own key of the parsed JSON. */
const sum = (values: Iterable<number>) => [...values].reduce((a, b) => a + b, 0);

describe('labels named like object properties', { timeout: 120_000 }, () => {
  it('every item is counted in the per-class, confusion and distribution tables', async () => {
    const dir = await tempDir('assay-labels-');
    await mkdir(join(dir, 'prompts'));
    await copyFile(join(REPO, 'examples', 'prompts', 'tone.md'), join(dir, 'prompts', 'tone.md'));
    const rows = Array.from(
      { length: 30 },
      (_, i) => `r${i},Where is order ${i}?,It shipped.,${LABELS[i % 3]}`,
    );
    await writeFile(join(dir, 'replies.csv'), `id,customer_message,reply,human\n${rows.join('\n')}\n`);
    const suite = join(dir, 'labels.suite.json');
    await writeFile(
      suite,
      JSON.stringify({
        version: 1,
        name: 'odd-labels',
        task: 'judge',
        dataset: { path: 'replies.csv', columns: { gold: 'human' } },
        judge: { prompt: 'prompts/tone.md', labels: LABELS },
        backends: ['openai:gpt-4o-mini'],
      }),
    );
    const out = join(dir, 'out');
    await assayCli(['run', suite, '--simulate', '--out', out, '--no-progress'], dir);
    const text = await readFile(join(out, 'report.json'), 'utf8');
    const report = JSON.parse(text);
    const label = report.scores.label;
    expect(report.counts.items).toBe(30);
    expect(label.metrics.accuracy.n).toBe(30);

    const perClass = label.tables.perClass as Record<string, { support: number }>;
    expect(Object.keys(perClass).sort()).toEqual([...LABELS].sort());
    for (const name of LABELS) expect(Object.hasOwn(perClass, name) && perClass[name]!.support).toBe(10);
    expect(sum(Object.values(perClass).map((c) => c.support))).toBe(30);

    const confusion = label.tables.confusion as Record<string, Record<string, number>>;
    expect(Object.keys(confusion).sort()).toEqual([...LABELS].sort());
    for (const row of Object.values(confusion)) expect(Object.keys(row).sort()).toEqual([...LABELS].sort());
    expect(sum(Object.values(confusion).flatMap((row) => Object.values(row)))).toBe(30);
    for (const name of LABELS) expect(sum(Object.values(confusion[name]!))).toBe(10);

    const distribution = label.tables.distribution as Record<string, number>;
    expect(sum(Object.values(distribution))).toBe(30);
    for (const value of Object.values(distribution)) expect(typeof value).toBe('number');

    // report.txt names each label in its per-class lines.
    const reportText = await readFile(join(out, 'report.txt'), 'utf8');
    for (const name of LABELS) expect(reportText).toContain(name);
  });
});
