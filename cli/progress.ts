import { visibleLine as shown } from '../shared/lib/format.js';
import type { BatchEvent } from '../shared/use-cases/batch-lane.js';
import type { RunEvent } from './local-run.js';

/** One run's progress: what its line shows. */
interface RunProgress {
  total: number;
  done: number;
  failed: number;
  costUsd: number;
  cachedCalls: number;
  simulated: boolean;
  started: boolean;
  startedAt: number;
  lastDecile: number;
}

/**
 * A progress line on stderr: done/total, rate, ETA, live cost, failures. Redrawn in place on a
 * terminal; on a pipe or CI log, one line every 10 % so logs stay readable. Every piece of data a
 * line quotes (the run id, folder, backend names, the predictions' column, a vendor's batch id
 * and status text) is shown with its control characters written visibly (`\x1b`), so that a
 * name or a vendor's text cannot set the window title or clear the screen. One reporter can
 * follow several runs (a sweep's variants): each run, named by its events, counts on its own.
 */
export function progressReporter(stream: NodeJS.WriteStream = process.stderr): (event: RunEvent) => void {
  const tty = stream.isTTY === true;
  const runs = new Map<string, RunProgress>();
  let lastDraw = 0;

  const progressOf = (runId: string): RunProgress => {
    let p = runs.get(runId);
    if (!p) {
      p = {
        total: 0,
        done: 0,
        failed: 0,
        costUsd: 0,
        cachedCalls: 0,
        simulated: false,
        started: false,
        startedAt: Date.now(),
        lastDecile: -1,
      };
      runs.set(runId, p);
    }
    return p;
  };

  const line = (p: RunProgress) => {
    const elapsed = (Date.now() - p.startedAt) / 1000;
    const rate = p.done > 0 ? p.done / Math.max(elapsed, 0.001) : 0;
    const left = Math.max(0, p.total - p.done);
    const eta = rate > 0 ? formatSeconds(left / rate) : '--';
    // Clamped: a count past the total (whatever the cause) draws a full bar, never a broken one.
    const share = p.total > 0 ? Math.min(1, Math.max(0, p.done / p.total)) : 1;
    const width = 24;
    const filled = Math.round(share * width);
    const bar = `${'█'.repeat(filled)}${'░'.repeat(width - filled)}`;
    const sim = p.simulated ? ' SIMULATED' : '';
    return `${bar} ${p.done}/${p.total} ${(share * 100).toFixed(0).padStart(3)}%  ${rate.toFixed(1)}/s  ETA ${eta}  cost $${p.costUsd.toFixed(4)}  failed ${p.failed}  cached ${p.cachedCalls}${sim}`;
  };
  const draw = (p: RunProgress, force = false) => {
    if (tty) {
      const now = Date.now();
      if (!force && now - lastDraw < 100) return;
      lastDraw = now;
      stream.write(`\r\x1b[2K${line(p)}`);
      return;
    }
    const decile = p.total > 0 ? Math.floor(Math.min(1, p.done / p.total) * 10) : 10;
    if (force || decile > p.lastDecile) {
      p.lastDecile = decile;
      stream.write(`${line(p)}\n`);
    }
  };

  return (event) => {
    const p = progressOf(event.runId);
    switch (event.type) {
      case 'started':
        // Sent when ingest has read the whole dataset: items scored meanwhile are already counted.
        {
          p.started = true;
          p.simulated = event.run.simulated;
          const to = `${event.queued} to score${event.run.predictions ? `: ${shown(event.run.predictions)}` : ` with ${event.run.suite.backends.map(shown).join(', ')}`}`;
          const sample = event.run.suite.run?.sample;
          if (sample) {
            // A sample is drawn from the valid rows: its size is what is scored. The dataset's
            // invalid rows are recorded (as failed, for the report) but are not the sample's items.
            const sampled = event.total - event.invalidRows;
            p.total = sampled;
            p.done += sampled - event.queued;
            const invalid =
              event.invalidRows > 0
                ? `; the dataset's ${event.invalidRows} invalid rows are recorded as failed`
                : '';
            stream.write(
              `run ${shown(event.run.runId)} → ${shown(event.outDir)}\n` +
                `${sampled} items sampled (seed ${sample.seed})${invalid}; ${sampled - event.queued} already done, ${to}\n`,
            );
          } else {
            p.total = event.total;
            // The invalid rows are recorded as failed already: the bar counts them done.
            p.done += event.alreadyDone + event.invalidRows;
            stream.write(
              `run ${shown(event.run.runId)} → ${shown(event.outDir)}\n` +
                `${event.total} items (${event.invalidRows} invalid rows), ${event.alreadyDone} already done, ${to}\n`,
            );
          }
        }
        if (p.simulated)
          stream.write(
            'SIMULATED: the backend is the simulator; answers are drawn from the gold labels, not a model.\n',
          );
        draw(p, true);
        break;
      case 'call':
        p.costUsd += event.completion.costUsd;
        if (event.completion.cached) p.cachedCalls += 1;
        break;
      case 'item':
        p.done += 1;
        if (event.result.status === 'failed') p.failed += 1;
        if (p.started) draw(p);
        break;
      case 'batch':
        // Batch waits are long and rare: each step gets its own line, then the bar again.
        if (tty) stream.write('\r\x1b[2K');
        stream.write(`${batchLine(event.event)}\n`);
        if (tty && p.started) draw(p, true);
        break;
      case 'finished':
        if (tty) stream.write(`\r\x1b[2K${line(p)}\n`);
        // The run is over: a later run with the same id (the same suite run again) starts afresh.
        runs.delete(event.runId);
        break;
    }
  };
}

/** A batch step's line: the vendor's ids, backend names and status text shown visibly. */
function batchLine(event: BatchEvent): string {
  switch (event.type) {
    case 'round':
      return `batch round ${event.round}: ${event.items} items, ${event.deferred} waiting for batch answers`;
    case 'submitted':
      return `batch ${shown(event.batchId)} submitted to ${shown(event.backend)}: ${event.requests} requests (round ${event.round})`;
    case 'submit_failed':
      return `batch to ${shown(event.backend)} not accepted (${shown(event.error)}); its ${event.requests} requests go synchronous`;
    case 'polled': {
      const counts = event.total === undefined ? '' : ` ${event.finished ?? 0}/${event.total}`;
      return `batch ${shown(event.batchId)} (${shown(event.backend)}): ${shown(event.status)}${counts}`;
    }
    case 'collected':
      return `batch ${shown(event.batchId)} collected: ${event.answered} answered, ${event.toSync} to the synchronous lane`;
  }
}

function formatSeconds(seconds: number): string {
  if (!Number.isFinite(seconds)) return '--';
  const s = Math.round(seconds);
  return s >= 60 ? `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s` : `${s}s`;
}
