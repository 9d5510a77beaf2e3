/** `assay cloud`: a suite through the AWS pipeline on this machine (moto_server, the real handlers). */
import { detectDefaultBackend } from '../../shared/lib/providers/registry.js';
import { renderSweepText } from '../../shared/sweeps/sweep-files.js';
import { runLocalCloud } from '../cloud/local-cloud.js';
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
