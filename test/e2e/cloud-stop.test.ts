/** `assay cloud stop`, as a user types it: the table must be named, and an unknown run is said so. */
import { describe, expect, it } from 'vitest';
import { assayCli, tempDir } from '../helpers.js';

describe('assay cloud stop', { timeout: 120_000 }, () => {
  it('asks for the table when none is named, and exits 1', async () => {
    const dir = await tempDir();
    const failed = await assayCli(['cloud', 'stop', 'quickstart-0123456789ab'], dir, {
      ASSAY_TABLE_NAME: '',
    }).catch((error: { code: number; stderr: string }) => error);
    expect('code' in failed && failed.code).toBe(1);
    expect(failed.stderr).toMatch(/name the table: --table/);
  });

  it('lists the subcommand in `assay cloud --help`', async () => {
    const { stdout } = await assayCli(['cloud', '--help'], await tempDir());
    expect(stdout).toMatch(/stop \[options\] <runId>/);
  });
});
