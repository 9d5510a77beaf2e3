/**
 * How the command asks V8 to collect while it writes a report. V8 lets its old space grow to up
 * to four times what was live at the last full collection before collecting again; writing a
 * report parses every result back, so nearly everything it allocates is garbage at once, and
 * that garbage, not what is live, made the command's peak memory. While a report is written,
 * the old space is collected once it has grown by half (`--heap-growing-percent`): a
 * 100,000-item qa report peaked at 680 MB with about 100 MB live, and at 300 MB with this, for
 * about a fifth more of the report's time. Scoring keeps V8's default, for its throughput, and
 * so does the report of a run too small for its garbage to matter (tens of MB at most), which
 * would only pay the time.
 */
import { setFlagsFromString } from 'node:v8';

/** How far the old space grows past what was live before it is collected again, in percent. */
const REPORT_HEAP_GROWTH_PERCENT = 50;
/** The items from which a report's heap growth is bounded. */
export const REPORT_HEAP_BOUND_FROM = 50_000;

let depth = 0;

/**
 * Runs `work`, the report of a run of `items` items, with the report's heap growth when the run
 * has at least {@link REPORT_HEAP_BOUND_FROM} items; V8's default again once no such work is left.
 */
export async function withReportHeap<T>(
  items: number,
  work: () => Promise<T>,
  setFlags: (flags: string) => void = setFlagsFromString,
): Promise<T> {
  if (items < REPORT_HEAP_BOUND_FROM) return work();
  if (depth++ === 0) setFlags(`--heap-growing-percent=${REPORT_HEAP_GROWTH_PERCENT}`);
  try {
    return await work();
  } finally {
    // 0 is V8's default: the growth chosen by V8 from its collection and allocation speeds.
    if (--depth === 0) setFlags('--heap-growing-percent=0');
  }
}
