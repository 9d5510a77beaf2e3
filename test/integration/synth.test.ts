import { execFile } from 'node:child_process';
import { access } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { REPO } from '../helpers.js';

const run = promisify(execFile);
const INFRA = join(REPO, 'infra');

/** The real CLI path a user takes: `npx cdk synth` with cdk-nag on, then cfn-lint on the template. */
describe('cdk synth', () => {
  it('synthesizes offline with cdk-nag AwsSolutions on, and cfn-lint finds no errors', async () => {
    const synth = await run('npx', ['cdk', 'synth', '--no-notices', '-q'], {
      cwd: INFRA,
      env: { ...process.env, CDK_DISABLE_CLI_TELEMETRY: 'true' },
      maxBuffer: 64 * 1024 * 1024,
    });
    expect(synth.stderr).not.toMatch(/AwsSolutions-\w+.*(Error|error)/);
    const template = join(INFRA, 'cdk.out', 'AssayStack.template.json');
    await access(template);
    // cfn-lint exits 0 (clean), 2 (errors), 4 (warnings), 8 (informational); W3005 is CDK noise.
    const lint = await run('cfn-lint', ['--ignore-checks', 'W3005', '--', template]).then(
      (r) => ({ code: 0, out: r.stdout }),
      (e: { code: number; stdout: string }) => ({ code: e.code, out: e.stdout }),
    );
    expect(lint.code & 2, lint.out).toBe(0);
  }, 240_000);
});
