import { execFile } from 'node:child_process';
import { access, readdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it, onTestFinished } from 'vitest';
import { REPO, tempDir } from '../helpers.js';

const run = promisify(execFile);
const INFRA = join(REPO, 'infra');

type Resources = Record<string, { Type: string; Properties: Record<string, unknown> }>;

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

    // cfn-lint exits 0 (clean), 2 (errors), 4 (warnings), 8 (informational); W3005 is CDK noise.
    const lint = await run('cfn-lint', ['--ignore-checks', 'W3005', '--', template]).then(
      (r) => ({ code: 0, out: r.stdout }),
      (e: { code: number; stdout: string }) => ({ code: e.code, out: e.stdout }),
    );
    expect(lint.code & 2, lint.out).toBe(0);
  }, 600_000);
});
