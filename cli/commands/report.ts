/** `assay report`: rebuild the report files of a run folder from its results log. */
import { readFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { FolderBlobStore } from '../../shared/adapters/local/folder-blob-store.js';
import { LocalRunHistory } from '../../shared/adapters/local/local-run-history.js';
import { LocalRunStore } from '../../shared/adapters/local/local-run-store.js';
import { validateSuite } from '../../shared/registry/suite.js';
import { writeRunReport } from '../../shared/use-cases/aggregate-run.js';
import { withReportHeap } from '../heap.js';
import { summary } from './summary.js';

export async function reportCommand(runDir: string): Promise<void> {
  const { runId, total } = JSON.parse(await readFile(join(runDir, 'run.json'), 'utf8')) as {
    runId: string;
    total?: number;
  };
  const { report } = await withReportHeap(total ?? 0, () =>
    writeRunReport(
      {
        runStore: new LocalRunStore(runDir, { checkSuite: validateSuite }),
        reports: new FolderBlobStore(runDir),
        history: new LocalRunHistory(dirname(resolve(runDir)), validateSuite),
      },
      runId,
    ),
  );
  process.stdout.write(summary(report, runDir));
}
