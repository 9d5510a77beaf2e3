/** `assay tune`: tune a judge on part of its labelled items and prove the result on the rest. */
import { isAbsolute, relative } from 'node:path';
import { type TuneOptions, tuneSuiteFile } from '../tune.js';

/** The command line's flags: the tuning options under their flag names. */
export type TuneFlags = Omit<TuneOptions, 'outDir' | 'pricesPath' | 'env' | 'onStep'> & {
  out?: string;
  prices?: string;
  json?: boolean;
};

export async function tuneCommand(suitePath: string, flags: TuneFlags): Promise<void> {
  const { out, prices, json, ...options } = flags;
  const { outDir, report } = await tuneSuiteFile(suitePath, {
    ...options,
    outDir: out,
    pricesPath: prices,
    onStep: (line) => process.stderr.write(`${line}\n`),
  });
  if (json) {
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
