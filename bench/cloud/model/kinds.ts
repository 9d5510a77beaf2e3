/**
 * What kind of work an invocation is, read from its event, and how that work grows with a run:
 * the rule the projection (projection.ts) applies to the figures measured for it.
 *
 * - per batch: a worker or dead-letter invocation handles at most a batch of records;
 * - per pass: a scheduled function's pass looks at the runs in progress, not at their items;
 * - per chunk: ingest reads a dataset a chunk (INGEST_CHUNK_BYTES) at a time;
 * - per part: an aggregation step of one part of a run (a part is a chunk's results);
 * - per run: an aggregation of a whole run, or a step that merges or assembles all its parts.
 */
import type { FunctionName } from '../../../shared/lib/layout/queues.js';

export type Growth = 'per batch' | 'per pass' | 'per chunk' | 'per part' | 'per run';

/** An invocation's kind: the function, and for ingest and aggregate what the event asked. */
export function invocationKind(fn: FunctionName, event: unknown): string {
  if (fn !== 'ingest' && fn !== 'aggregate') return fn;
  const body = firstBody(event);
  if (fn === 'ingest') return body && 'chunk' in body ? 'ingest:chunk' : 'ingest:upload';
  if (body && typeof body.step === 'string') return `aggregate:${body.step}`;
  if (body && 'sweepId' in body) return 'aggregate:sweep';
  return 'aggregate:run';
}

export function growthOf(kind: string): Growth {
  if (kind === 'worker' || kind === 'deadLetter') return 'per batch';
  if (kind === 'batchPoller' || kind === 'watchdog') return 'per pass';
  if (kind.startsWith('ingest:')) return 'per chunk';
  if (kind === 'aggregate:tally' || kind === 'aggregate:files') return 'per part';
  return 'per run';
}

function firstBody(event: unknown): Record<string, unknown> | undefined {
  const body = (event as { Records?: { body?: string }[] } | undefined)?.Records?.[0]?.body;
  if (body === undefined) return undefined;
  try {
    const parsed = JSON.parse(body) as unknown;
    return typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}
