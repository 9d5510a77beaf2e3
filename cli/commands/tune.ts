/** `assay tune`: tune a judge on part of its labelled items and prove the result on the rest. */
import { isAbsolute, relative } from 'node:path';
import { tuneSuiteFile } from '../tune.js';

export interface TuneFlags {
  out?: string;
  seed: number;
  heldOut: number;
  demonstrations: number;
  finalists: number;
  alpha: number;
  simulate?: boolean;
  concurrency?: number;
  prices?: string;
  json?: boolean;
}

export async function tuneCommand(suitePath: string, flags: TuneFlags): Promise<void> {
  const { outDir, report } = await tuneSuiteFile(suitePath, {
    outDir: flags.out,
    seed: flags.seed,
    heldOut: flags.heldOut,
    demonstrations: flags.demonstrations,
    finalists: flags.finalists,
    alpha: flags.alpha,
    simulate: flags.simulate,
    concurrency: flags.concurrency,
    pricesPath: flags.prices,
    onStep: (line) => process.stderr.write(`${line}\n`),
  });
  if (flags.json) {
    process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
    return;
  }
  const { readFile } = await import('node:fs/promises');
  process.stdout.write(await readFile(`${outDir}/report.txt`, 'utf8'));
  const shown = relative(process.cwd(), outDir);
  process.stdout.write(
    `report: ${shown.startsWith('..') || isAbsolute(shown) ? outDir : shown || '.'}/report.txt (and report.json)\n`,
  );
}
