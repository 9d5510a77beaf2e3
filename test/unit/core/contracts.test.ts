import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { FolderBlobStore } from '../../../shared/adapters/local/folder-blob-store.js';
import { suiteJsonSchema } from '../../../shared/core/suite.js';
import { snapshotPrompts } from '../../../shared/prompts/prompts.js';
import { csvCell, renderLabeledCsv } from '../../../shared/reports/files.js';
import { allTasks, TaskRegistryError, verifyPrompts } from '../../../shared/tasks/registry.js';
import { startVendorFake } from '../../fakes/vendor-fake.js';
import { REPO, tempDir } from '../../helpers.js';

const run = promisify(execFile);

describe('task registry', () => {
  it('every default prompt of every task exists and uses only placeholders the task fills', async () => {
    const store = new FolderBlobStore(REPO);
    for (const task of allTasks()) {
      const sets = task.defaultPromptSets();
      expect(sets.length).toBeGreaterThan(10);
      for (const paths of sets) {
        const prompts = await snapshotPrompts(store, Object.values(paths));
        const texts = Object.fromEntries(Object.entries(prompts).map(([path, p]) => [path, p.text]));
        verifyPrompts(task, paths, texts);
      }
    }
  });

  it('refuses a prompt with an unknown placeholder, at load time', () => {
    const [task] = allTasks();
    expect(() => verifyPrompts(task!, { classify: 'x.md' }, { 'x.md': 'Judge {src} vs {target}' })).toThrow(
      TaskRegistryError,
    );
    expect(() => verifyPrompts(task!, { classify: 'x.md' }, {})).toThrow(
      /prompt file for classify not found: x.md/,
    );
  });
});

describe('labeled.csv', () => {
  it('neutralises spreadsheet formulas and quotes as RFC 4180 says', () => {
    expect(csvCell('=HYPERLINK("http://x")')).toBe(`"'=HYPERLINK(""http://x"")"`);
    expect(csvCell('+1')).toBe("'+1");
    expect(csvCell('-2+3')).toBe("'-2+3");
    expect(csvCell('@SUM(A1)')).toBe("'@SUM(A1)");
    expect(csvCell('\tx')).toBe("'\tx");
    expect(csvCell('a,b')).toBe('"a,b"');
    expect(csvCell('line\nbreak')).toBe('"line\nbreak"');
    expect(csvCell(-2)).toBe('-2');
    expect(csvCell(Number.NaN)).toBe('');
  });

  it('writes one row per result with a BOM for spreadsheets', () => {
    const csv = renderLabeledCsv([
      {
        runId: 'r',
        itemId: '1',
        row: 1,
        status: 'scored',
        gold: 'TP',
        prediction: 'TP',
        input: { src: '=1+1', tgt: 'b' },
        stages: {},
        simulated: false,
        finishedAt: '',
      },
    ]);
    expect(csv.startsWith('\uFEFFidx,row,src,tgt,gold,pred')).toBe(true);
    expect(csv).toContain("1,1,'=1+1,b,TP,TP,scored");
  });
});

describe('suite JSON Schema', () => {
  it('the published schemas/suite.schema.json is the one generated from the zod schema', async () => {
    const published = JSON.parse(await readFile(join(REPO, 'schemas', 'suite.schema.json'), 'utf8'));
    expect(published).toEqual(suiteJsonSchema());
  });
});

describe('npm start (the embedded default)', () => {
  it('runs the example on the simulator without keys, says so, and writes the report contract', async () => {
    const out = await tempDir();
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/_API_KEY$/.test(k)));
    const { stdout, stderr } = await run(
      process.execPath,
      [join(REPO, 'bin', 'assay.mjs'), 'quickstart', '--out', out],
      { cwd: REPO, env: { ...env, ASSAY_CACHE_DIR: join(out, 'cache') } },
    );
    expect(stderr).toContain('SIMULATED');
    expect(stdout).toContain('SIMULATED');
    const report = JSON.parse(await readFile(join(out, 'report.json'), 'utf8'));
    for (const key of [
      'runId',
      'suite',
      'task',
      'method',
      'startedAt',
      'finishedAt',
      'counts',
      'metrics',
      'cost',
      'latencyMs',
      'prompts',
    ]) {
      expect(report).toHaveProperty(key);
    }
    expect(report.counts).toMatchObject({ items: 256, scored: 256, failed: 0, invalidRows: 0 });
    expect(report.metrics).toMatchObject({
      accuracy: expect.any(Number),
      macroF1: expect.any(Number),
      kappa: expect.any(Number),
      binary: { accuracy: expect.any(Number), f1: expect.any(Number) },
    });
    expect(Object.keys(report.metrics.perClass).sort()).toEqual(['FP1', 'FP2', 'FP3', 'TP']);
    expect(report.metrics.perClass.TP).toEqual({
      precision: expect.any(Number),
      recall: expect.any(Number),
      f1: expect.any(Number),
      support: 224,
    });
    expect(report.cost).toMatchObject({ totalUsd: 0, per10kUsd: 0, tokens: { input: expect.any(Number) } });
    expect(report.latencyMs).toMatchObject({ p50: expect.any(Number), p95: expect.any(Number) });
    expect(report.prompts['gec/feedback/baseline.md']).toMatch(/^sha256:[0-9a-f]{16}$/);
    expect(report.simulated).toBe(true);
  }, 60_000);

  it('uses the real provider as soon as OPENAI_API_KEY is set (here: the OpenAI SDK against a local fake)', async () => {
    const fake = await startVendorFake(() => ({ text: '{"label":"TP","reason":"fixes an error"}' }));
    try {
      const out = await tempDir();
      const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/_API_KEY$/.test(k)));
      const { stdout } = await run(
        process.execPath,
        [join(REPO, 'bin', 'assay.mjs'), 'quickstart', '--out', out, '--sample', '12', '--no-progress'],
        { cwd: REPO, env: { ...env, ...fake.env, ASSAY_CACHE_DIR: join(out, 'cache') } },
      );
      expect(stdout).not.toContain('SIMULATED');
      const report = JSON.parse(await readFile(join(out, 'report.json'), 'utf8'));
      expect(report).toMatchObject({
        simulated: false,
        backends: ['openai:gpt-4o-mini'],
        counts: { items: 12, scored: 12 },
      });
      expect(report.cost.totalUsd).toBeGreaterThan(0);
      expect(fake.requests.length).toBeGreaterThan(0);
      expect(fake.requests.every((r) => r.vendor === 'openai' && r.model === 'gpt-4o-mini')).toBe(true);
      expect(fake.requests[0]!.body.response_format).toMatchObject({ type: 'json_schema' });
    } finally {
      await fake.close();
    }
  }, 60_000);
});
