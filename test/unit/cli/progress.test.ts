/**
 * The progress reporter as the CLI uses it: one reporter for every run of a command (a sweep's
 * variants, one after another). Each run's line counts that run's items only, on a pipe and on a
 * terminal, and a count past the total draws a full bar instead of throwing.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { RunEvent } from '../../../cli/local-run.js';
import { progressReporter } from '../../../cli/progress.js';
import type { ItemResult, RunRecord } from '../../../shared/model/model.js';
import type { Completion } from '../../../shared/model/provider.js';
import type { AggregateOutcome } from '../../../shared/use-cases/aggregate-run.js';

function fakeStream(isTTY: boolean): { stream: NodeJS.WriteStream; text: () => string } {
  const chunks: string[] = [];
  const stream = {
    isTTY,
    write: (chunk: string) => {
      chunks.push(chunk);
      return true;
    },
  } as unknown as NodeJS.WriteStream;
  return { stream, text: () => chunks.join('') };
}

/** A run's events as a local run sends them: items scored while ingest reads, then started, the rest, finished. */
function runEvents(runId: string, total: number, scoredBeforeStart = 0, failed = 0): RunEvent[] {
  const run = { runId, simulated: true, suite: { backends: ['sim:gpt-4o-mini'] } } as unknown as RunRecord;
  const item = (i: number): RunEvent => ({
    runId,
    type: 'item',
    result: { status: i < failed ? 'failed' : 'scored' } as ItemResult,
  });
  const events: RunEvent[] = [];
  for (let i = 0; i < total; i++) {
    events.push({
      runId,
      type: 'call',
      completion: { costUsd: 0.001, cached: false } as Completion,
    });
    if (i === scoredBeforeStart)
      events.push({
        runId,
        type: 'started',
        run,
        outDir: `/runs/${runId}`,
        total,
        alreadyDone: 0,
        queued: total,
        invalidRows: 0,
      });
    events.push(item(i));
  }
  events.push({
    runId,
    type: 'finished',
    outcome: { status: 'skipped', reason: 'test' } as AggregateOutcome,
  });
  return events;
}

/** The progress lines (bars) of the output, without terminal control sequences. */
function bars(text: string): string[] {
  return text
    .split(/\r|\n/)
    .map((l) => l.replaceAll('\x1b[2K', ''))
    .filter((l) => /^[█░]{24} /.test(l));
}

describe('progress reporter', () => {
  beforeEach(() => {
    vi.useFakeTimers();
    vi.setSystemTime(new Date('2026-01-01T00:00:00Z'));
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  for (const tty of [false, true]) {
    it(`two runs one after another on one reporter count apart (${tty ? 'terminal' : 'pipe'})`, () => {
      const { stream, text } = fakeStream(tty);
      const report = progressReporter(stream);
      // The first run is bigger than the second: its count must not spill into the second's bar.
      const first = runEvents('sweep.a-1', 10, 3, 2);
      const second = runEvents('sweep.b-2', 4, 1);
      expect(() => {
        for (const event of [...first, ...second]) {
          report(event);
          vi.advanceTimersByTime(150);
        }
      }).not.toThrow();

      const lines = bars(text());
      const firstLines = lines.filter((l) => / \d+\/10 /.test(l));
      const secondLines = lines.filter((l) => / \d+\/4 /.test(l));
      expect(firstLines.length + secondLines.length).toBe(lines.length);
      expect(firstLines.at(-1)).toMatch(/^█{24} 10\/10 100% .* cost \$0\.0100 {2}failed 2 .*SIMULATED$/);
      // The second run's line starts from its own items scored before it started, and ends full.
      expect(secondLines[0]).toMatch(/ 1\/4 {2}25% /);
      expect(secondLines.at(-1)).toMatch(/^█{24} 4\/4 100% .* cost \$0\.0040 {2}failed 0 /);
      for (const l of secondLines) expect(Number(/ (\d+)\/4 /.exec(l)![1])).toBeLessThanOrEqual(4);
      expect(text()).toContain('run sweep.b-2 → /runs/sweep.b-2\n4 items (0 invalid rows)');
    });
  }

  it('a count past the total draws a full bar, not an error', () => {
    const { stream, text } = fakeStream(true);
    const report = progressReporter(stream);
    const events = runEvents('over-1', 3);
    // Two more items than the run said it had.
    const extra = events.filter((e) => e.type === 'item').slice(0, 2);
    expect(() => {
      for (const event of [...events.slice(0, -1), ...extra]) {
        report(event);
        vi.advanceTimersByTime(150);
      }
    }).not.toThrow();
    expect(bars(text()).at(-1)).toMatch(/^█{24} 5\/3 100% .* ETA 0s /);
  });
});
