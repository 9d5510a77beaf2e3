/**
 * Small hostile dataset files, run as a user runs them: the `assay` binary reads each in both
 * shells (`assay run`, and `assay cloud`: the Lambda handlers on moto), and each ends as an
 * input error that names the file, the row and the limit met, with the run reported (never left
 * `ingesting`), while the CLI process's peak memory, outside the JS heap included, stays under
 * 300 MB. The files are made when the test runs (see test/fakes/hostile-files.ts).
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Report } from '../../shared/model/report.js';
import { HOSTILE_FILES, type HostileKind, PEAK_RSS_BOUND_BYTES, runHostile } from '../fakes/hostile-files.js';
import { tempDir } from '../helpers.js';

/** What each file's error says: the limit it met, and the setting that raises it. */
const EXPECTED: Record<HostileKind, { limit: RegExp; row: number }> = {
  parquet: { limit: /maxParquetPageBytes \(67108864; ASSAY_MAX_PARQUET_PAGE_BYTES raises it\)/, row: 1 },
  gzipLine: { limit: /maxGzipRatio \(200; ASSAY_MAX_GZIP_RATIO raises it\)/, row: 1 },
  deepJson: { limit: /maxJsonDepth \(64; ASSAY_MAX_JSON_DEPTH raises it\)/, row: 1 },
  wideCsv: { limit: /maxColumns \(10000; ASSAY_MAX_COLUMNS raises it\)/, row: 1 },
  longLine: { limit: /maxRecordBytes \(8388608; ASSAY_MAX_RECORD_BYTES raises it\)/, row: 2 },
};

/** The most memory each ingest invocation's container held, MB, from `assay cloud`'s invocation lines. */
const ingestMemory = (output: string): number[] =>
  [...output.matchAll(/^ {2}ingest .*max memory (\d+) MB\)$/gm)].map((match) => Number(match[1]));

const report = async (dir: string) => JSON.parse(await readFile(join(dir, 'report.json'), 'utf8')) as Report;

describe('hostile dataset files, through the CLI', { timeout: 240_000 }, () => {
  for (const shell of ['local', 'cloud'] as const) {
    for (const kind of Object.keys(HOSTILE_FILES) as HostileKind[]) {
      it(`${shell}: ${HOSTILE_FILES[kind]} ends as an input error naming its row, under 300 MB`, async () => {
        const dir = await tempDir(`assay-hostile-${kind}-`);
        const run = await runHostile(kind, shell, dir);
        const { limit, row } = EXPECTED[kind];

        expect(run.peakRss).toBeGreaterThan(0);
        if (shell === 'local') expect(run.peakRss).toBeLessThan(PEAK_RSS_BOUND_BYTES);
        else {
          // The local cloud's process holds moto's clients and a container per function that
          // ran (workers among them): the bound is each ingest container's, which counts its
          // memory outside the JS heap as Lambda does; the process as a whole stays well below
          // the ingest function's 1,024 MB.
          const ingest = ingestMemory(`${run.stdout}${run.stderr}`);
          expect(ingest.length).toBeGreaterThan(0);
          for (const mb of ingest) expect(mb * 1024 * 1024).toBeLessThan(PEAK_RSS_BOUND_BYTES);
          expect(run.peakRss).toBeLessThan(2 * PEAK_RSS_BOUND_BYTES);
        }
        // The run was reported, with the row the reader stopped at (or the long line) failed.
        const { counts } = await report(run.reportDir);
        expect(counts.failed).toBeGreaterThanOrEqual(1);
        const errors = await readFile(join(run.reportDir, 'errors.txt'), 'utf8');
        expect(errors).toContain(`row ${row}`);
        expect(errors).toMatch(limit);
        if (kind === 'longLine') {
          // Only the long line fails: the rows around it are scored.
          expect(counts).toMatchObject({ items: 3, failed: 1 });
          return;
        }
        expect(errors).toContain(HOSTILE_FILES[kind]);
        expect(counts.scored).toBe(0);
        // The command says why, naming the limit: `assay run` fails (nothing scored); `assay
        // cloud` shows ingest's log line (the upload rejected, or, for a file larger than one
        // ingest chunk, read in ranges, the run stopped) and the report it downloaded.
        expect(`${run.stdout}${run.stderr}`).toMatch(limit);
        if (shell === 'local') expect(run.code).toBe(1);
        else
          expect(`${run.stdout}${run.stderr}`).toMatch(
            /upload rejected|dataset not readable to its end: run stopped/,
          );
      });
    }
  }
});
