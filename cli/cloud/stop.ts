/**
 * `assay cloud stop RUN`: stops a run of a deployed stack, or of the local cloud while it runs
 * (`--endpoint`: its moto_server). The run's record is marked; the workers then end its items
 * that have no result as `stopped` without calling a model, and the run completes and is
 * reported as any other.
 */
import { type AwsClients, createAwsClients } from '../../shared/adapters/aws/clients.js';
import { DynamoRunStore } from '../../shared/adapters/aws/dynamo-run-store.js';
import { InputError } from '../../shared/model/errors.js';
import { type StopOutcome, stopRun } from '../../shared/use-cases/stop-run.js';
import { motoClients } from './moto.js';

export interface CloudStopOptions {
  runId: string;
  /** The stack's table (its `TableName` output), or the local cloud's. */
  table: string;
  /** moto_server's (or LocalStack's) URL; unset: AWS, with the SDK's credentials and region. */
  endpoint?: string;
  /** Why, as the run's record and its stopped items will say. */
  reason?: string;
  /** Clients to use instead of building them (tests). */
  clients?: AwsClients;
}

export const DEFAULT_STOP_REASON = 'stopped with assay cloud stop';

export async function stopCloudRun(options: CloudStopOptions): Promise<StopOutcome> {
  if (!/^[A-Za-z0-9_.-]{3,255}$/.test(options.table)) {
    throw new InputError(`--table ${JSON.stringify(options.table)} is not a DynamoDB table name`);
  }
  const clients =
    options.clients ??
    (options.endpoint ? motoClients(options.endpoint) : createAwsClients({ AWS_ENDPOINT_URL: undefined }));
  try {
    const store = new DynamoRunStore({ client: clients.doc, tableName: options.table });
    return await stopRun(store, options.runId, options.reason ?? DEFAULT_STOP_REASON);
  } finally {
    if (!options.clients) for (const client of Object.values(clients)) client.destroy();
  }
}
