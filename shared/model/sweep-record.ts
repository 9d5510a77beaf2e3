/** A sweep's stored record: its variants' runs, its gate, where its report goes. */
import { z } from 'zod';
import { StoredDataError } from './codec.js';

export const SWEEP_SCHEMA_VERSION = 1;
export type SweepStatus = 'running' | 'aggregating' | 'done';

const sweepRecordSchema = z.object({
  schemaVersion: z.literal(SWEEP_SCHEMA_VERSION),
  sweepId: z.string(),
  suiteName: z.string(),
  task: z.string(),
  datasetKey: z.string(),
  /** In the suite's order; the baseline is one of them. */
  variants: z.array(z.object({ name: z.string(), runId: z.string() })).min(1),
  baseline: z.string(),
  gate: z
    .object({
      conditions: z.array(z.string()),
      required: z.union([z.boolean(), z.array(z.string())]),
      /** Variants stop as soon as an anytime-valid confidence sequence settles the gate. */
      sequential: z.boolean().optional(),
      /** The sequential verdict's error level. */
      alpha: z.number().optional(),
      /** The seed of the order items are scored in. */
      seed: z.number().optional(),
    })
    .optional(),
  rankBy: z.string().optional(),
  status: z.enum(['running', 'aggregating', 'done']),
  createdAt: z.string(),
  finishedAt: z.string().optional(),
  /** Where sweep.json and sweep.txt go. */
  reportPrefix: z.string(),
});
export type SweepRecord = z.infer<typeof sweepRecordSchema>;

/** A stored sweep record, checked; a StoredDataError says what is wrong with it. */
export function decodeSweep(data: unknown, where: string): SweepRecord {
  const parsed = sweepRecordSchema.safeParse(data);
  if (!parsed.success)
    throw new StoredDataError(`${where}: not a sweep record: ${z.prettifyError(parsed.error)}`);
  return parsed.data;
}
