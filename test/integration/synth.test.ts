import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { access, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it, onTestFinished } from 'vitest';
import { DEFAULT_CONFIG } from '../../infra/config.js';
import { addNagChecks } from '../../infra/nag.js';
import { AssayStack } from '../../infra/stack.js';
import { REPO, tempDir } from '../helpers.js';

const run = promisify(execFile);
const INFRA = join(REPO, 'infra');

type Resources = Record<string, { Type: string; Properties: Record<string, unknown> }>;

/** cfn-lint's exit code on `template` (0 clean, bit 2 errors, 4 warnings, 8 informational; W3005 is CDK noise) and its output. */
function cfnLint(template: string): Promise<{ code: number; out: string }> {
  return run('cfn-lint', ['--ignore-checks', 'W3005', '--', template]).then(
    (r) => ({ code: 0, out: r.stdout }),
    (e: { code: number; stdout: string }) => ({ code: e.code, out: e.stdout }),
  );
}

/** The asset folders of the synth (file assets, like the AWS CLI layer zip, are left out). */
async function assetFolders(out: string): Promise<string[]> {
  return (await readdir(out, { withFileTypes: true }))
    .filter((entry) => entry.isDirectory() && entry.name.startsWith('asset.'))
    .map((entry) => entry.name);
}

/**
 * The real CLI path a user takes: `npx cdk synth` with cdk-nag on, then cfn-lint on the
 * template. The only synth of the suite that bundles the handlers, so the bundles are checked here.
 */
describe('cdk synth', () => {
  it('synthesizes offline with cdk-nag AwsSolutions on, bundles each handler, and cfn-lint finds no errors', async () => {
    // A fresh output folder: cdk.out keeps the assets of earlier synths.
    const out = await tempDir('assay-synth-');
    onTestFinished(() => rm(out, { recursive: true, force: true }));
    const synth = await run('npx', ['cdk', 'synth', '--no-notices', '-q', '--output', out], {
      cwd: INFRA,
      env: { ...process.env, CDK_DISABLE_CLI_TELEMETRY: 'true' },
      maxBuffer: 64 * 1024 * 1024,
    });
    expect(synth.stderr).not.toMatch(/AwsSolutions-\w+.*(Error|error)/);
    // What the deployment needs, printed before anything else (infra/capacity.ts).
    expect(synth.stderr).toMatch(
      /^What this deployment needs from the account\n {2}Lambda concurrency {2}500 of 1,000/,
    );
    expect(synth.stderr).toContain('ceiling             7,989 items/s (set by the workers)');
    const template = join(out, 'AssayStack.template.json');
    await access(template);

    // Each handler bundled locally into an ESM file with the createRequire banner and a source map.
    const assets = await assetFolders(out);
    const bundles: string[] = [];
    for (const dir of assets) if ((await readdir(join(out, dir))).includes('index.mjs')) bundles.push(dir);
    expect(bundles).toHaveLength(6);
    for (const dir of bundles) {
      const code = await readFile(join(out, dir, 'index.mjs'), 'utf8');
      expect(code.startsWith("import { createRequire } from 'module'; const require = createRequire")).toBe(
        true,
      );
      expect(await readdir(join(out, dir))).toContain('index.mjs.map');
    }

    // The repository's prompts/ folder ships inside the ingest bundle only.
    const withPrompts: string[] = [];
    for (const dir of assets) if ((await readdir(join(out, dir))).includes('prompts')) withPrompts.push(dir);
    expect(withPrompts).toHaveLength(1);
    const resources = (JSON.parse(await readFile(template, 'utf8')) as { Resources: Resources }).Resources;
    const ingest = Object.values(resources).find(
      (r) =>
        r.Type === 'AWS::Lambda::Function' &&
        (r.Properties.Environment as { Variables?: Record<string, unknown> } | undefined)?.Variables
          ?.POWERTOOLS_SERVICE_NAME === 'assay-ingest',
    );
    expect((ingest?.Properties.Code as { S3Key?: string } | undefined)?.S3Key).toBe(
      `${withPrompts[0]!.slice('asset.'.length)}.zip`,
    );
    const promptFiles = await readdir(join(out, withPrompts[0]!, 'prompts'), { recursive: true });
    expect(promptFiles.some((file) => String(file).endsWith('.md'))).toBe(true);

    const lint = await cfnLint(template);
    expect(lint.code & 2, lint.out).toBe(0);
  }, 600_000);

  it('passes cfn-lint with provisioned pollers, large batches, warm throughput and a results retention', async () => {
    const out = await tempDir('assay-synth-scale-');
    onTestFinished(() => rm(out, { recursive: true, force: true }));
    const context = JSON.parse(readFileSync(join(INFRA, 'cdk.json'), 'utf8')).context;
    // Bundling skipped through CDK's own switch (as `cdk ls` does): the bundles are checked above.
    const app = new App({ outdir: out, context: { ...context, 'aws:cdk:bundling-stacks': [] } });
    const stack = new AssayStack(app, 'AssayStack', {
      config: {
        ...DEFAULT_CONFIG,
        workerEventSourceMode: 'provisioned',
        workerMinPollers: 4,
        workerMaxPollers: 60,
        workerBatchSize: 100,
        workerBatchingWindowSeconds: 2,
        tableWarmReadUnitsPerSecond: 16_000,
        tableWarmWriteUnitsPerSecond: 32_000,
        resultRetentionDays: 30,
      },
    });
    addNagChecks(app);
    const template = Template.fromStack(stack).toJSON() as { Resources: Resources };
    const resources = Object.values(template.Resources);
    expect(resources.filter((r) => r.Properties?.ProvisionedPollerConfig)).toHaveLength(1);
    expect(resources.filter((r) => r.Properties?.ReservedConcurrentExecutions)).toHaveLength(2);
    expect(resources.find((r) => r.Type === 'AWS::DynamoDB::Table')?.Properties).toMatchObject({
      WarmThroughput: { ReadUnitsPerSecond: 16_000, WriteUnitsPerSecond: 32_000 },
      TimeToLiveSpecification: { AttributeName: 'ttl', Enabled: true },
    });
    const path = join(out, 'AssayStack.scale.template.json');
    await writeFile(path, JSON.stringify(template));
    const lint = await cfnLint(path);
    expect(lint.code & 2, lint.out).toBe(0);
  }, 300_000);
});
