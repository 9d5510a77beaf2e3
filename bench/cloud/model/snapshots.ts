/**
 * The states some invocations of a run start from, kept so that calibration.ts can replay each
 * alone: the simulated DynamoDB's tables and S3's buckets at the moment the handler is called
 * (shared, not copied: the stand-ins never change a stored item in place), the event, and what
 * its container ran before it.
 *
 * Kept, after the upload: the first invocation of each kind (kinds.ts: an upload or a chunk for
 * ingest, each step of an aggregation), the first two of the kinds done a chunk or a part at a
 * time; for the worker, its first invocation (a cold start) and the first second invocation of
 * a container (warm: replayed after the container's first).
 */
import type { FunctionName } from '../../../shared/lib/layout/queues.js';
import type { SimAws } from '../clients.js';
import type { DynamoSnapshot } from '../dynamo.js';
import type { S3Snapshot } from '../s3.js';
import type { SimWorld } from '../world.js';
import { growthOf, invocationKind } from './kinds.js';

export interface Capture {
  fn: FunctionName;
  kind: string;
  /** Which invocation it is, in words. */
  label: string;
  event: unknown;
  /** Events the same container handled before it, replayed first (a warm container). */
  warmup: unknown[];
  /** Simulated epoch ms when the handler was called. */
  atEpochMs: number;
  dynamo: DynamoSnapshot;
  s3: S3Snapshot;
}

/** Invocations kept of each kind: two of those done a chunk or a part at a time (they differ in size), else one. */
const perKind = (kind: string) => (growthOf(kind) === 'per chunk' || growthOf(kind) === 'per part' ? 2 : 1);

export class Captures {
  readonly list: Capture[] = [];
  private coldWorker = false;
  /** Each worker container's first event, until one of them has its second invocation kept. */
  private firstEvents: Map<number, unknown> | undefined = new Map();

  constructor(
    private readonly aws: SimAws,
    private readonly enabled: boolean,
  ) {}

  /** Called just before a handler runs: keeps the state if this invocation is one to replay. */
  consider(
    fn: FunctionName,
    event: unknown,
    container: { id: number; invocations: number },
    world: SimWorld,
  ): void {
    if (!this.enabled) return;
    const kind = invocationKind(fn, event);
    const keep = (label: string, warmup: unknown[] = []) =>
      this.list.push({
        fn,
        kind,
        label,
        event,
        warmup,
        atEpochMs: world.now(),
        dynamo: this.aws.dynamo.snapshot(),
        s3: this.aws.s3.snapshot(),
      });
    if (fn === 'worker') {
      if (!this.firstEvents) return;
      if (container.invocations === 0) {
        this.firstEvents.set(container.id, event);
        if (!this.coldWorker) {
          this.coldWorker = true;
          keep('the first worker invocation (a cold container)');
        }
      } else if (container.invocations === 1 && this.firstEvents.has(container.id)) {
        keep('a worker container’s second invocation (warm, after its first)', [
          this.firstEvents.get(container.id),
        ]);
        this.firstEvents = undefined;
      }
      return;
    }
    const count = this.list.filter((c) => c.kind === kind).length;
    if (count < perKind(kind)) keep(`${kind} invocation ${count + 1} after the upload`);
  }
}
