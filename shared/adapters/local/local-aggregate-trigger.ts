import type { AggregateTrigger, AggregationStep, StepTrigger } from '../../ports/ports.js';

/** What a use-case asked to aggregate: a run, a sweep, or a step of a run aggregated in parts. */
export type AggregateRequest = { runId: string } | { sweepId: string } | AggregationStep;

/**
 * The aggregate queue of the local shell: the requests the use-cases make (the last item of a
 * run, or ingest finding the run complete) wait here, in the order they were made, until the
 * runner takes them once its own queue has drained and aggregates what they name. As on the
 * queue, a request may come twice (the last worker and ingest both see the run complete):
 * aggregation is claimed, so a second one does nothing.
 */
export class LocalAggregateTrigger implements AggregateTrigger, StepTrigger {
  private pending: AggregateRequest[] = [];

  async trigger(runId: string): Promise<void> {
    this.pending.push({ runId });
  }

  async triggerSweep(sweepId: string): Promise<void> {
    this.pending.push({ sweepId });
  }

  async triggerStep(step: AggregationStep): Promise<void> {
    this.pending.push(step);
  }

  /** The requests made since the last take, oldest first; they are taken (a second take is empty). */
  take(): AggregateRequest[] {
    const taken = this.pending;
    this.pending = [];
    return taken;
  }
}
