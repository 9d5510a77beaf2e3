/**
 * The AWS shell's chunked ingest reads rows as the local run does: dot paths, several
 * annotators and the row's other columns reach the item messages (through the queue's own
 * message check), and from them the stored results, a long kept column cut as long inputs are.
 */
import { describe, expect, it } from 'vitest';
import { inlineItemBodySchema } from '../../../shared/adapters/aws/sqs-work-queue.js';
import { FolderBlobStore, LayeredBlobStore } from '../../../shared/adapters/local/folder-blob-store.js';
import { LocalRunStore } from '../../../shared/adapters/local/local-run-store.js';
import { MemoryChunkStore } from '../../../shared/adapters/local/memory-chunk-store.js';
import { type ItemMessage, type ItemResult, storedFieldLength } from '../../../shared/model/model.js';
import { validateSuite } from '../../../shared/registry/suite.js';
import { type ChunkTask, ingestChunk } from '../../../shared/use-cases/ingest-chunk/index.js';
import { prepareRun } from '../../../shared/use-cases/prepare-run.js';
import { scoreItem } from '../../../shared/use-cases/score-item.js';
import { REPO, tempDir } from '../../helpers.js';

const KEY = 'datasets/annotated/data.jsonl';
const long = 'z'.repeat(17_000);
const ROWS = [
  {
    id: 'a',
    question: 'Is the sky blue?',
    model: { answer: 'yes' },
    labels: [{ value: 'yes' }, { value: 'yes' }, { value: 'no' }],
    topic: 'sky',
    meta: { source: 'web' },
  },
  {
    id: 'b',
    question: 'Is grass red?',
    model: { answer: 'yes' },
    labels: [{ value: 'no' }, { value: 'no' }, { value: 'no' }],
    topic: 'grass',
  },
  {
    id: 'c',
    question: 'Is it a tie?',
    model: { answer: 'no' },
    labels: [{ value: 'yes' }, { value: 'no' }],
    topic: 'tie',
  },
  {
    id: 'd',
    question: 'Is this long?',
    model: { answer: 'yes' },
    labels: [{ value: 'yes' }],
    topic: 'long',
    context: { text: long },
  },
];

describe('kept columns and annotators through the chunked ingest (AWS shell)', () => {
  it('reach the item messages and the stored results', async () => {
    const bucket = new FolderBlobStore(await tempDir('assay-columns-bucket-'));
    await bucket.put(KEY, `${ROWS.map((row) => JSON.stringify(row)).join('\n')}\n`);
    await bucket.put('prompts/yes-no.md', 'Answer yes or no.\n\n<question>\n{question}\n</question>\n');
    const run = await prepareRun({
      suite: validateSuite(
        {
          version: 1,
          name: 'annotated',
          task: 'judge',
          dataset: {
            path: 'data.jsonl',
            columns: { gold: 'labels.*.value', output: 'model.answer' },
          },
          judge: { prompt: 'yes-no.md', labels: ['yes', 'no'] },
        },
        'test suite',
      ),
      prompts: new LayeredBlobStore([bucket, new FolderBlobStore(REPO)]),
      datasetKey: KEY,
      datasetVersion: 'v1',
      reportPrefix: 'reports/{runId}/',
    });
    const runStore = new LocalRunStore(await tempDir('assay-columns-runs-'));
    await runStore.createRun(run);
    const sent: ItemMessage[] = [];
    const tasks: ChunkTask[] = [];
    const trigger = { trigger: async () => {}, triggerSweep: async () => {} };
    const deps = {
      runStore,
      bucket,
      chunks: new MemoryChunkStore(),
      queue: { sendItems: async (m: ItemMessage[]) => void sent.push(...m) },
      trigger,
      sendChunk: async (task: ChunkTask) => void tasks.push(task),
      // A few rows a chunk: the rows are read by several invocations.
      chunkBytes: 300,
      chunkLeaseMs: 60_000,
    };
    const { version } = (await bucket.read(KEY))!;
    tasks.push({ runId: run.runId, key: KEY, version, format: 'jsonl', chunk: 0, start: 0, row: 0, line: 0 });
    for (let task = tasks.shift(); task; task = tasks.shift()) await ingestChunk(deps, task);

    // The queue's message check keeps what the item carries.
    const messages = sent.map(
      (m) => inlineItemBodySchema.parse(JSON.parse(JSON.stringify(m))) as ItemMessage,
    );
    expect(messages.map((m) => m.item.id)).toEqual(['a', 'b', 'd']);
    expect(messages[0]!.item).toMatchObject({
      gold: 'yes',
      annotations: ['yes', 'yes', 'no'],
      given: { output: 'yes' },
      columns: { topic: 'sky', meta: '{"source":"web"}' },
    });

    const scoring = {
      runStore,
      trigger,
      providerFor: () => {
        throw new Error('the answers are given: no model is called');
      },
      onTransientError: 'fail' as const,
      maxAttempts: 1,
    };
    for (const message of messages) await scoreItem(scoring, message);
    const results: ItemResult[] = [];
    for await (const result of runStore.results(run.runId)) results.push(result);
    const byId = new Map(results.map((r) => [r.itemId, r]));
    expect(byId.get('a')).toMatchObject({
      status: 'scored',
      gold: 'yes',
      annotations: ['yes', 'yes', 'no'],
      columns: { topic: 'sky', meta: '{"source":"web"}' },
    });
    expect(byId.get('b')).toMatchObject({
      gold: 'no',
      annotations: ['no', 'no', 'no'],
      columns: { topic: 'grass' },
    });
    // The tie is an invalid row with its reason.
    expect(results.find((r) => r.row === 3)?.failure?.message).toMatch(/^row 3: the annotators tie/);
    // A long kept column is stored as a long input is: its opening, its length and digest.
    const context = byId.get('d')!.columns!.context!;
    expect(context.length).toBeLessThan(3_000);
    expect(storedFieldLength(context)).toBe(JSON.stringify({ text: long }).length);
  });
});
