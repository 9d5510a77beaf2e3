/** `assay cloud`: a suite through the AWS pipeline on this machine (moto_server, the real handlers); deploying and stopping it on AWS. */

import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { detectDefaultBackend } from '../../shared/lib/providers/registry.js';
import { InputError } from '../../shared/model/errors.js';
import { renderSweepText } from '../../shared/sweeps/sweep-files.js';
import { runLocalCloud } from '../cloud/local-cloud.js';
import { stopCloudRun } from '../cloud/stop.js';
import { PACKAGE_ROOT } from '../package-root.js';
import { QUICKSTART_SUITE } from './run.js';
import { failOnRequiredGate, summary } from './summary.js';

export interface CloudFlags {
  out?: string;
  dataset?: string;
  verbose?: boolean;
  simulate?: boolean;
  stallTimeout?: number;
}

export async function cloudCommand(suite: string | undefined, flags: CloudFlags): Promise<void> {
  const { report, sweep, outDir } = await runLocalCloud({
    suitePath: suite ?? QUICKSTART_SUITE,
    backends: suite === undefined ? [detectDefaultBackend(process.env)] : undefined,
    simulate: flags.simulate,
    datasetPath: flags.dataset,
    outDir: flags.out,
    verbose: flags.verbose,
    stallTimeoutMs: flags.stallTimeout,
    onLog: (line) => process.stderr.write(`${line}\n`),
  });
  if (sweep) {
    process.stdout.write(`\n${renderSweepText(sweep)}`);
    failOnRequiredGate(sweep);
  }
  if (report) process.stdout.write(summary(report, outDir));
}

export interface CloudStopFlags {
  table?: string;
  endpoint?: string;
  reason?: string;
}

/** `assay cloud stop RUN`: marks the run stopped; its items without a result end as `stopped`, and its report is written. */
export async function cloudStopCommand(runId: string, flags: CloudStopFlags): Promise<void> {
  const table = flags.table ?? process.env.ASSAY_TABLE_NAME;
  if (!table) {
    throw new InputError(
      "name the table: --table <the stack's TableName output> (or ASSAY_TABLE_NAME); for the local cloud, the one its log names",
    );
  }
  const endpoint = flags.endpoint ?? process.env.AWS_ENDPOINT_URL;
  const outcome = await stopCloudRun({ runId, table, endpoint, reason: flags.reason });
  process.stdout.write(
    outcome.status === 'done'
      ? `run ${runId} is done already: nothing to stop\n`
      : `run ${runId} (${outcome.runStatus}) stopped: its items without a result end as "stopped" without a model call; the report follows when the last one is recorded\n`,
  );
}

export interface CloudDeployFlags {
  /** Deploy settings, `key=value` each (infra/config.ts), as `cdk deploy -c` takes them. */
  context?: string[];
}

/** A deploy setting as `-c` takes it: a setting's name, `=`, its value (which may be empty). */
const CONTEXT_SETTING = /^[A-Za-z][A-Za-z0-9]*=/;

/** The CDK command line of `assay cloud deploy`: `cdk deploy` with each setting as `-c key=value`. */
export function cdkDeployArgs(context: readonly string[]): string[] {
  for (const setting of context)
    if (!CONTEXT_SETTING.test(setting))
      throw new InputError(
        `a deploy setting is key=value (-c workerMaxConcurrency=400), got ${JSON.stringify(setting)}`,
      );
  return ['cdk', 'deploy', '--no-notices', ...context.flatMap((setting) => ['-c', setting])];
}

/**
 * `assay cloud deploy`: `npx cdk deploy` of the stack in infra/, with the settings given. The CDK
 * app prints what the deployment needs from the account (concurrency, table throughput, the
 * ceiling in items a second, what the settings stop) as it synthesizes, before anything is
 * deployed. The CDK app ships with the repository, not with the npm package.
 */
export async function cloudDeployCommand(
  flags: CloudDeployFlags,
  root: string = PACKAGE_ROOT,
): Promise<void> {
  const infra = join(root, 'infra');
  if (!existsSync(join(infra, 'cdk.json')))
    throw new InputError(
      'the CDK app (infra/) ships with the repository, not with the package: deploy from a clone of it (npm ci, then assay cloud deploy)',
    );
  const args = cdkDeployArgs(flags.context ?? []);
  const code = await new Promise<number | null>((resolve, reject) => {
    const child = spawn('npx', args, { cwd: infra, stdio: 'inherit' });
    child.once('error', reject);
    child.once('exit', resolve);
  });
  if (code !== 0) throw new InputError(`cdk deploy failed (exit code ${code}): its output above says why`);
}
