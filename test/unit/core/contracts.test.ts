import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { FolderBlobStore } from '../../../shared/adapters/local/folder-blob-store.js';
import { gecFamily } from '../../../shared/families/gec/task.js';
import { snapshotPrompts } from '../../../shared/lib/prompts/prompts.js';
import { allTasks, TaskRegistryError, verifyPrompts } from '../../../shared/registry/registry.js';
import { publishedSchemas, suiteJsonSchema } from '../../../shared/registry/suite.js';
import { csvCell, renderLabeledCsv, resultView } from '../../../shared/reports/files.js';
import { startVendorFake } from '../../fakes/vendor-fake.js';
import { REPO, suite, tempDir } from '../../helpers.js';

const run = promisify(execFile);

describe('task registry', () => {
  it('every default prompt of every task exists and uses only placeholders the task fills', async () => {
    const store = new FolderBlobStore(REPO);
    for (const task of allTasks()) {
      const sets = task.defaultPromptSets();
      expect(sets.length).toBeGreaterThanOrEqual(task.name === 'gec' ? 11 : 1);
      for (const paths of sets) {
        const prompts = await snapshotPrompts(store, Object.values(paths));
        const texts = Object.fromEntries(Object.entries(prompts).map(([path, p]) => [path, p.text]));
        verifyPrompts(task, paths, texts);
      }
    }
  });

  it('refuses a prompt with an unknown placeholder, at load time', () => {
    const task = gecFamily;
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
    // Full-width forms, which some spreadsheets read as the ASCII ones.
    expect(csvCell('＝1+1')).toBe("'＝1+1");
    expect(csvCell('＠SUM(A1)')).toBe("'＠SUM(A1)");
    // A formula after a semicolon or a tab inside: guarded too, as a spreadsheet splitting on them
    // reads it as a cell of its own; and quoted.
    expect(csvCell('ok;=cmd|calc')).toBe(`"ok;'=cmd|calc"`);
    expect(csvCell('ok\t=1+1')).toBe(`"ok\t'=1+1"`);
    expect(csvCell('\tx')).toBe(`"'\tx"`);
    expect(csvCell('a,b')).toBe('"a,b"');
    expect(csvCell('line\nbreak')).toBe('"line\nbreak"');
    expect(csvCell(-2)).toBe('-2');
    expect(csvCell(Number.NaN)).toBe('');
  });

  it('writes one row per result with a BOM: input columns, gold, then each scorer and what decided it', () => {
    const csv = renderLabeledCsv(
      [
        {
          schemaVersion: 2,
          runId: 'r',
          itemId: '1',
          row: 1,
          status: 'scored',
          gold: 'TP',
          input: { src: '=1+1', tgt: 'b' },
          output: { label: 'TP', reason: 'fixes it', decidedBy: 'sim:gold' },
          scores: { label: { kind: 'label', value: 'TP', explanation: 'fixes it', decidedBy: 'sim:gold' } },
          stages: {},
          simulated: false,
          finishedAt: '',
        },
        {
          schemaVersion: 2,
          runId: 'r',
          itemId: '2',
          row: 2,
          status: 'failed',
          gold: 'FP1',
          input: { src: 'a', tgt: 'c' },
          failure: { kind: 'parse', message: 'no label' },
          scores: {},
          stages: {},
          simulated: false,
          finishedAt: '',
        },
      ],
      resultView(gecFamily, suite(), []),
    );
    expect(csv.startsWith('\uFEFFidx,row,src,tgt,gold,status,failure,label,label.by,reason,output')).toBe(
      true,
    );
    expect(csv).toContain("1,1,'=1+1,b,TP,scored,,TP,sim:gold,fixes it,");
    expect(csv).toContain('2,2,a,c,FP1,failed,parse,,parse,no label,');
  });
});

describe('suite JSON Schema', () => {
  it('the published schemas/suite.schema.json is the one generated from the zod schema', async () => {
    const published = JSON.parse(await readFile(join(REPO, 'schemas', 'suite.schema.json'), 'utf8'));
    expect(published).toEqual(suiteJsonSchema());
  });

  it('every family format published in schemas/ is the one generated from its zod schema (assay schema)', async () => {
    const files = Object.keys(publishedSchemas());
    expect(files).toContain('cleanup.decision-spans.schema.json');
    expect(files).toContain('cleanup.heuristics.schema.json');
    for (const [file, schema] of Object.entries(publishedSchemas())) {
      expect(JSON.parse(await readFile(join(REPO, 'schemas', file), 'utf8')), file).toEqual(schema);
    }
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
      'schemaVersion',
      'runId',
      'suite',
      'task',
      'config',
      'scores',
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

  it('refuses a backend without its key before it draws anything or writes a run folder', async () => {
    const out = join(await tempDir(), 'run');
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/_API_KEY$/.test(k)));
    const failed = run(
      process.execPath,
      [join(REPO, 'bin', 'assay.mjs'), 'run', 'examples/reply-tone.suite.json', '--out', out],
      {
        cwd: REPO,
        env,
      },
    );
    const error = await failed.then(
      () => undefined,
      (e: { code: number; stdout: string; stderr: string }) => e,
    );
    expect(error?.code).toBe(1);
    expect(error?.stderr).toContain('OPENAI_API_KEY');
    expect(error?.stderr).not.toContain('█');
    expect(error?.stderr).not.toMatch(/^run .* → /m);
    await expect(readFile(join(out, 'run.json'))).rejects.toThrow(/ENOENT/);
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
