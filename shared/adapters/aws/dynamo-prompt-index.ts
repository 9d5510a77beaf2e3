/**
 * The prompt index on the run table: which suites read which prompt files.
 *
 * | entity         | pk                     | sk              | attributes            | access pattern                                   |
 * |----------------|------------------------|-----------------|-----------------------|--------------------------------------------------|
 * | prompt reader  | `PROMPT#<path>`        | `SUITE#<name>`  | type, path, suiteName | Query pk = PROMPT#path: the suites to re-run     |
 * | suite prompts  | `SUITEPROMPTS#<name>`  | `PROMPTS`       | type, paths (list)    | GetItem: what to remove when the suite changes   |
 *
 * `setSuitePrompts` is idempotent and converges: run again after a crash, it ends in the same
 * state, so ingest can call it on every delivery of a suite's upload.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import {
  BatchWriteCommand,
  type DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  paginateQuery,
} from '@aws-sdk/lib-dynamodb';
import {
  SUITE_PROMPTS_SK as PROMPTS,
  promptPk,
  suitePromptsPk,
  promptReaderSk as suiteSk,
} from '../../lib/layout/table.js';
import type { PromptIndex } from '../../ports/ports.js';

/** BatchWriteItem's limit. */
const BATCH = 25;

export class DynamoPromptIndex implements PromptIndex {
  constructor(private readonly options: { client: DynamoDBDocumentClient; tableName: string }) {}

  async setSuitePrompts(suiteName: string, paths: readonly string[]): Promise<void> {
    const { client, tableName } = this.options;
    const before = await client.send(
      new GetCommand({
        TableName: tableName,
        Key: { pk: suitePromptsPk(suiteName), sk: PROMPTS },
        ConsistentRead: true,
      }),
    );
    const wanted = new Set(paths);
    const stale = ((before.Item?.paths as string[] | undefined) ?? []).filter((p) => !wanted.has(p));
    const requests = [
      ...[...wanted].map((path) => ({
        PutRequest: {
          Item: { pk: promptPk(path), sk: suiteSk(suiteName), type: 'promptReader', path, suiteName },
        },
      })),
      ...stale.map((path) => ({ DeleteRequest: { Key: { pk: promptPk(path), sk: suiteSk(suiteName) } } })),
    ];
    for (let i = 0; i < requests.length; i += BATCH) {
      let pending: typeof requests | undefined = requests.slice(i, i + BATCH);
      for (let attempt = 0; pending && pending.length > 0; attempt += 1) {
        if (attempt > 5) throw new Error(`prompt index: DynamoDB kept ${pending.length} writes unprocessed`);
        if (attempt > 0) await sleep(50 * 2 ** attempt);
        const out = await client.send(new BatchWriteCommand({ RequestItems: { [tableName]: pending } }));
        pending = out.UnprocessedItems?.[tableName] as typeof requests | undefined;
      }
    }
    await client.send(
      new PutCommand({
        TableName: tableName,
        Item: { pk: suitePromptsPk(suiteName), sk: PROMPTS, type: 'suitePrompts', paths: [...wanted].sort() },
      }),
    );
  }

  async suitesUsing(path: string): Promise<string[]> {
    const { client, tableName } = this.options;
    const suites: string[] = [];
    const pages = paginateQuery(
      { client },
      {
        TableName: tableName,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': promptPk(path) },
        ConsistentRead: true,
      },
    );
    for await (const page of pages) for (const item of page.Items ?? []) suites.push(String(item.suiteName));
    return suites.sort();
  }
}
