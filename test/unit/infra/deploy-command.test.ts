import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { cdkDeployArgs, cloudDeployCommand } from '../../../cli/commands/cloud.js';
import { InputError } from '../../../shared/model/errors.js';

describe('assay cloud deploy', () => {
  it('runs cdk deploy with each setting as -c key=value', () => {
    expect(cdkDeployArgs([])).toEqual(['cdk', 'deploy', '--no-notices']);
    expect(cdkDeployArgs(['workerEventSourceMode=provisioned', 'providerKeys='])).toEqual([
      'cdk',
      'deploy',
      '--no-notices',
      '-c',
      'workerEventSourceMode=provisioned',
      '-c',
      'providerKeys=',
    ]);
  });

  it('refuses a setting that is not key=value', () => {
    expect(() => cdkDeployArgs(['workerMaxConcurrency'])).toThrow(InputError);
    expect(() => cdkDeployArgs(['=400'])).toThrow(/key=value/);
  });

  it('says the CDK app ships with the repository when infra/ is not there', async () => {
    const root = mkdtempSync(join(tmpdir(), 'assay-deploy-'));
    onTestFinished(() => rmSync(root, { recursive: true, force: true }));
    await expect(cloudDeployCommand({}, root)).rejects.toThrow(/ships with the repository/);
  });
});
