/** `assay cloud`: a suite through the AWS pipeline on this machine (moto_server, the real handlers). */

import { detectDefaultBackend } from '../../shared/lib/providers/registry.js';
import { InputError } from '../../shared/model/errors.js';
import { renderSweepText } from '../../shared/sweeps/sweep-files.js';
import { runLocalCloud } from '../cloud/local-cloud.js';
import { stopCloudRun } from '../cloud/stop.js';
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
