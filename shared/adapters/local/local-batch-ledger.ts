import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { BatchLedger, LedgerBatch } from '../../ports.js';
import { JsonLinesWriter, readJsonLines } from './jsonl.js';

/**
 * The batches a local run submitted: `batches.jsonl` in its run folder, one line per batch,
 * written before the run waits on it, so a killed run polls the same batches when it resumes.
 */
export class LocalBatchLedger implements BatchLedger {
  readonly path: string;
  private readonly writer: JsonLinesWriter;

  constructor(runDir: string) {
    this.path = join(runDir, 'batches.jsonl');
    this.writer = new JsonLinesWriter(this.path, () => mkdir(runDir, { recursive: true }));
  }

  list(): Promise<LedgerBatch[]> {
    return readJsonLines<LedgerBatch>(this.path);
  }

  add(batch: LedgerBatch): Promise<void> {
    return this.writer.append(batch);
  }
}
