import type { BatchEvent } from '../shared/core/batch-lane.js';
import type { RunEvent } from './local-run.js';

/**
 * A progress line on stderr: done/total, rate, ETA, live cost, failures. Redrawn in place on a
 * terminal; on a pipe or CI log, one line every 10 % so logs stay readable.
 */
export function progressReporter(stream: NodeJS.WriteStream = process.stderr): (event: RunEvent) => void {
  const tty = stream.isTTY === true;
  let total = 0;
  let done = 0;
  let failed = 0;
  let costUsd = 0;
  let cachedCalls = 0;
  let simulated = false;
  let started = false;
  const startedAt = Date.now();
  let lastDecile = -1;
  let lastDraw = 0;

  const line = () => {
    const elapsed = (Date.now() - startedAt) / 1000;
    const rate = done > 0 ? done / Math.max(elapsed, 0.001) : 0;
    const left = total - done;
    const eta = rate > 0 ? formatSeconds(left / rate) : '--';
    const share = total > 0 ? done / total : 1;
    const width = 24;
    const filled = Math.round(share * width);
    const bar = `${'█'.repeat(filled)}${'░'.repeat(width - filled)}`;
    const sim = simulated ? ' SIMULATED' : '';
    return `${bar} ${done}/${total} ${(share * 100).toFixed(0).padStart(3)}%  ${rate.toFixed(1)}/s  ETA ${eta}  cost $${costUsd.toFixed(4)}  failed ${failed}  cached ${cachedCalls}${sim}`;
  };
  const draw = (force = false) => {
    if (tty) {
      const now = Date.now();
      if (!force && now - lastDraw < 100) return;
      lastDraw = now;
      stream.write(`\r\x1b[2K${line()}`);
      return;
    }
    const decile = total > 0 ? Math.floor((done / total) * 10) : 10;
    if (force || decile > lastDecile) {
      lastDecile = decile;
      stream.write(`${line()}\n`);
    }
  };

  return (event) => {
    switch (event.type) {
      case 'started':
        // Sent when ingest has read the whole dataset: items scored meanwhile are already counted.
        started = true;
        total = event.total;
        done += event.alreadyDone;
        simulated = event.run.simulated;
        stream.write(
          `run ${event.run.runId} → ${event.outDir}\n` +
            `${event.total} items (${event.invalidRows} invalid rows), ${event.alreadyDone} already done, ${event.queued} to score with ${event.run.suite.backends.join(', ')}\n`,
        );
        if (simulated)
          stream.write(
            'SIMULATED: the backend is the simulator; answers are drawn from the gold labels, not a model.\n',
          );
        draw(true);
        break;
      case 'call':
        costUsd += event.completion.costUsd;
        if (event.completion.cached) cachedCalls += 1;
        break;
      case 'item':
        done += 1;
        if (event.result.status === 'failed') failed += 1;
        if (started) draw();
        break;
      case 'batch':
        // Batch waits are long and rare: each step gets its own line, then the bar again.
        if (tty) stream.write('\r\x1b[2K');
        stream.write(`${batchLine(event.event)}\n`);
        if (tty) draw(true);
        break;
      case 'finished':
        if (tty) stream.write(`\r\x1b[2K${line()}\n`);
        break;
    }
  };
}

function batchLine(event: BatchEvent): string {
  switch (event.type) {
    case 'round':
      return `batch round ${event.round}: ${event.items} items, ${event.deferred} waiting for batch answers`;
    case 'submitted':
      return `batch ${event.batchId} submitted to ${event.backend}: ${event.requests} requests (round ${event.round})`;
    case 'submit_failed':
      return `batch to ${event.backend} not accepted (${event.error}); its ${event.requests} requests go synchronous`;
    case 'polled': {
      const counts = event.total === undefined ? '' : ` ${event.finished ?? 0}/${event.total}`;
      return `batch ${event.batchId} (${event.backend}): ${event.status}${counts}`;
    }
    case 'collected':
      return `batch ${event.batchId} collected: ${event.answered} answered, ${event.toSync} to the synchronous lane`;
  }
}

function formatSeconds(seconds: number): string {
  if (!Number.isFinite(seconds)) return '--';
  const s = Math.round(seconds);
  return s >= 60 ? `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s` : `${s}s`;
}
