import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FolderBlobStore, LayeredBlobStore } from '../../../shared/adapters/local/folder-blob-store.js';
import { LocalRunHistory } from '../../../shared/adapters/local/local-run-history.js';
import { LocalRunStore } from '../../../shared/adapters/local/local-run-store.js';
import { LocalSweepStore } from '../../../shared/adapters/local/local-sweeps.js';
import { MemoryChunkStore } from '../../../shared/adapters/local/memory-chunk-store.js';
import { MemoryPromptIndex } from '../../../shared/adapters/local/memory-prompt-index.js';
import { datasetKeyOf, decodeEventKey, routeKey } from '../../../shared/lib/layout/bucket.js';
import { EMBEDDED_PRICES } from '../../../shared/lib/providers/pricing.js';
import { createProvider } from '../../../shared/lib/providers/registry.js';
import { DeferredError } from '../../../shared/model/errors.js';
import type { ItemMessage } from '../../../shared/model/model.js';
import type { Suite } from '../../../shared/registry/suite.js';
import { validateSuite } from '../../../shared/registry/suite.js';
import { ingestObject } from '../../../shared/use-cases/ingest-object.js';
import { REPO, suite, tempDir } from '../../helpers.js';

const GOLD = join(REPO, 'test', 'fixtures', 'pipeline', 'gold-12-plus-2-bad.csv');

describe('bucket layout', () => {
  it('routes suites, datasets, prompts and everything else', () => {
    expect(routeKey('suites/demo.json')).toEqual({ kind: 'suite', suiteName: 'demo' });
    expect(routeKey('datasets/demo/my café data.csv')).toEqual({ kind: 'dataset', suiteName: 'demo' });
    expect(routeKey('datasets/demo/nested/part-1.jsonl')).toEqual({ kind: 'dataset', suiteName: 'demo' });
    expect(routeKey('prompts/gec/feedback/baseline.md')).toEqual({
      kind: 'prompt',
      path: 'gec/feedback/baseline.md',
    });
    for (const key of [
      'suites/a/b.json',
      'suites/demo.yaml',
      'datasets/demo/',
      'datasets/x.csv',
      'reports/a/b',
      'x',
    ]) {
      expect(routeKey(key), key).toEqual({ kind: 'other' });
    }
  });

  it('decodes S3 event keys: + is a space, percent-escapes are UTF-8 (moto escapes / too)', () => {
    expect(decodeEventKey('datasets/quickstart/caf%C3%A9+gold.csv')).toBe(
      'datasets/quickstart/café gold.csv',
    );
    expect(decodeEventKey('datasets%2Fdemo%2Fa%2Bb.csv')).toBe('datasets/demo/a+b.csv');
  });

  it("places a suite's dataset under datasets/<name>/ unless its path is already a datasets/ key", () => {
    const of = (path: string) => datasetKeyOf(suite({ name: 'demo', dataset: { path } }));
    expect(of('data.csv')).toBe('datasets/demo/data.csv');
    expect(of('./sub/data.csv')).toBe('datasets/demo/sub/data.csv');
    expect(of('datasets/shared/gold.csv')).toBe('datasets/shared/gold.csv');
    // A path that leaves the suite's folder (relative to the suite file on disk) is looked up
    // by its file name in that folder, never normalised out of it into another area.
    expect(of('../x.csv')).toBe('datasets/demo/x.csv');
    expect(of('../../suites/demo.json')).toBe('datasets/demo/demo.json');
    // A `..` after the path's start, an absolute path and empty segments name no key.
    expect(of('datasets/demo/../x.csv')).toBeUndefined();
    expect(of('sub/../../x.csv')).toBeUndefined();
    expect(of('/etc/passwd')).toBeUndefined();
    expect(of('sub//x.csv')).toBeUndefined();
    expect(of('..')).toBeUndefined();
  });
});

describe('ingestObject', () => {
  async function setUp() {
    const bucket = new FolderBlobStore(await tempDir('assay-bucket-'));
    const runStore = new LocalRunStore(await tempDir('assay-runs-'));
    const sent: ItemMessage[] = [];
    const deps = {
      bucket,
      prompts: new LayeredBlobStore([bucket, new FolderBlobStore(REPO)]),
      // Every dataset here is read in one pass (chunked ingest: test/unit/core/ingest-chunks.test.ts).
      chunks: new MemoryChunkStore(),
      sendChunk: async () => {
        throw new Error('a dataset this small is read in one pass');
      },
      chunkBytes: 1 << 30,
      chunkLeaseMs: 60_000,
      // No keys in this environment: only sim: backends can be built.
      checkBackends: async (s: Suite) => {
        for (const backend of s.backends) createProvider(backend, { env: {}, prices: EMBEDDED_PRICES });
      },
      runStore,
      queue: { sendItems: async (messages: ItemMessage[]) => void sent.push(...messages) },
      trigger: { trigger: async () => {}, triggerSweep: async () => {} },
      promptIndex: new MemoryPromptIndex(),
      history: new LocalRunHistory(await tempDir('assay-history-'), validateSuite),
      sweeps: new LocalSweepStore(await tempDir('assay-sweeps-')),
    };
    const putSuite = (overrides: Record<string, unknown> = {}) =>
      bucket.put(
        'suites/demo.json',
        JSON.stringify({
          version: 1,
          name: 'demo',
          dataset: { path: 'data.csv' },
          task: 'gec',
          method: 'baseline',
          backends: ['sim:gold'],
          ...overrides,
        }),
      );
    return { bucket, runStore, sent, deps, putSuite };
  }

  it('refuses an upload whose backend has no key, before writing a run or sending an item', async () => {
    const { bucket, deps, sent, putSuite, runStore } = await setUp();
    await putSuite({ backends: ['openai:gpt-4o-mini'] });
    await bucket.put('datasets/demo/data.csv', await readFile(GOLD));
    const outcome = await ingestObject(deps, { key: 'datasets/demo/data.csv', version: 'etag:1' });
    expect(outcome).toMatchObject({ status: 'rejected', reason: expect.stringContaining('OPENAI_API_KEY') });
    expect(sent).toEqual([]);
    expect(await runStore.getRun('anything')).toBeUndefined();
  });

  it('does not reject an upload for deferred work (not permanent): it is thrown back for the event to come again', async () => {
    const { bucket, deps, sent, putSuite, runStore } = await setUp();
    await putSuite();
    await bucket.put('datasets/demo/data.csv', await readFile(GOLD));
    const later = new (class extends DeferredError {})('the backends answer later');
    const outcome = ingestObject(
      {
        ...deps,
        checkBackends: async () => {
          throw later;
        },
      },
      { key: 'datasets/demo/data.csv', version: 'etag:1' },
    );
    await expect(outcome).rejects.toBe(later);
    expect(sent).toEqual([]);
    expect(await runStore.getRun('anything')).toBeUndefined();
  });

  it('refuses a sweep one of whose variants has no key: no variant starts', async () => {
    const { bucket, deps, sent, putSuite, runStore } = await setUp();
    await putSuite({
      variants: [
        { name: 'sim', backends: ['sim:gold'] },
        { name: 'real', backends: ['openai:gpt-4o-mini'] },
      ],
    });
    await bucket.put('datasets/demo/data.csv', await readFile(GOLD));
    const outcome = await ingestObject(deps, { key: 'datasets/demo/data.csv', version: 'etag:1' });
    expect(outcome).toMatchObject({
      status: 'rejected',
      suiteName: 'demo',
      reason: expect.stringMatching(/^variant real: .*OPENAI_API_KEY/),
    });
    expect(sent).toEqual([]);
    expect(await runStore.getRun('anything')).toBeUndefined();
    expect(await deps.sweeps.sweepsOf('anything')).toEqual([]);
  });

  it('runs suites/<name>.json on an uploaded dataset, once per upload version', async () => {
    const { bucket, deps, sent, putSuite } = await setUp();
    await putSuite();
    await bucket.put('datasets/demo/my café data.csv', await readFile(GOLD));

    const first = await ingestObject(deps, { key: 'datasets/demo/my café data.csv', version: 'etag:1' });
    const again = await ingestObject(deps, { key: 'datasets/demo/my café data.csv', version: 'etag:1' });
    // A local run store holds one run: a new upload (a new run) goes to another folder.
    const reupload = await ingestObject(
      { ...deps, runStore: new LocalRunStore(await tempDir('assay-runs-')) },
      { key: 'datasets/demo/my café data.csv', version: 'etag:2' },
    );

    expect(first).toMatchObject({
      status: 'started',
      suiteName: 'demo',
      datasetKey: 'datasets/demo/my café data.csv',
    });
    expect(first.status === 'started' && first.start).toMatchObject({
      total: 14,
      invalidRows: 2,
      queued: 12,
    });
    expect(again).toMatchObject({ status: 'duplicate', runId: (first as { runId: string }).runId });
    expect(reupload.status).toBe('started');
    expect((reupload as { runId: string }).runId).not.toBe((first as { runId: string }).runId);
    expect(sent).toHaveLength(24);
  });

  it('runs an uploaded suite on its dataset, and waits when the dataset is not there yet', async () => {
    const { bucket, deps, putSuite, runStore } = await setUp();
    await putSuite();

    expect(await ingestObject(deps, { key: 'suites/demo.json', version: 'v1' })).toMatchObject({
      status: 'ignored',
      why: 'no-dataset',
      reason: expect.stringContaining('no dataset at datasets/demo/data.csv'),
    });
    await bucket.put('datasets/demo/data.csv', await readFile(GOLD));
    const outcome = await ingestObject(deps, { key: 'suites/demo.json', version: 'v2' });

    expect(outcome).toMatchObject({ status: 'started', datasetKey: 'datasets/demo/data.csv' });
    expect(await runStore.getRun((outcome as { runId: string }).runId)).toMatchObject({
      reportPrefix: `reports/demo/${(outcome as { runId: string }).runId}/`,
    });
  });

  it('indexes the prompts a suite reads; ignores keys outside the layout', async () => {
    const { deps, putSuite, bucket } = await setUp();
    await putSuite();
    await bucket.put('prompts/gec/feedback/baseline.md', 'Judge <src>{src}</src> → <tgt>{tgt}</tgt>');
    await ingestObject(deps, { key: 'suites/demo.json', version: 'v' }); // indexes its prompts
    expect(deps.promptIndex.bySuite.get('demo')).toEqual([
      'gec/common/repair.md',
      'gec/feedback/baseline.md',
    ]);
    expect(await ingestObject(deps, { key: 'prompts/gec/feedback/baseline.md', version: 'v' })).toMatchObject(
      { status: 'prompt', suites: [{ suiteName: 'demo', status: 'never-run' }] },
    );
    expect(await ingestObject(deps, { key: 'notes/readme.txt', version: 'v' })).toMatchObject({
      status: 'ignored',
      why: 'unknown-key',
    });
  });

  it('rejects a prompt that puts dataset text outside a tag section, saying how to fix it', async () => {
    const { deps, putSuite, bucket } = await setUp();
    await putSuite();
    await bucket.put('prompts/gec/feedback/baseline.md', 'Judge {src} → {tgt}');
    expect(await ingestObject(deps, { key: 'suites/demo.json', version: 'v' })).toMatchObject({
      status: 'rejected',
      reason: expect.stringMatching(/\{src\} carries dataset text and must sit alone in a tag section/),
    });
  });

  it.each([
    ['no suite', null, 'datasets/demo/data.csv', /^no suite at suites\/demo\.json/],
    ['a suite that is not JSON', '{', 'datasets/demo/data.csv', /not valid JSON/],
    [
      'a suite named after another file',
      { name: 'other' },
      'datasets/demo/data.csv',
      /declares the suite name "other"/,
    ],
    ['an unknown backend', { backends: ['nope:model'] }, 'datasets/demo/data.csv', /nope/],
    [
      'a missing prompt file',
      { prompts: { classify: 'gec/missing.md' } },
      'datasets/demo/data.csv',
      /gec\/missing\.md/,
    ],
    ['a file that is no dataset format', {}, 'datasets/demo/readme.md', /unknown dataset format/],
    [
      'a gold file (a local run merges it)',
      {
        task: 'judge',
        method: undefined,
        judge: { prompt: 'p.md', labels: ['a', 'b'] },
        dataset: { path: 'data.csv', goldFile: 'labels.csv' },
      },
      'datasets/demo/data.csv',
      /dataset\.goldFile is merged by a local run/,
    ],
    ['a dataset deleted since its upload', {}, 'datasets/demo/gone.csv', /is gone/],
    [
      'an extract pattern with a backreference (patterns run in linear time)',
      { dataset: { path: 'data.csv', extract: { gold: '(a)\\1' } } },
      'suites/demo.json',
      /dataset\.extract\.gold: the pattern uses a backreference \(\\1\): patterns are RE2 syntax and run in linear time/,
    ],
  ])('rejects %s (retrying cannot fix it)', async (_, suiteOverride, key, reason) => {
    const { bucket, deps, putSuite, sent } = await setUp();
    if (typeof suiteOverride === 'string') await bucket.put('suites/demo.json', suiteOverride);
    else if (suiteOverride) await putSuite(suiteOverride);
    await bucket.put('datasets/demo/data.csv', await readFile(GOLD));
    await bucket.put('datasets/demo/readme.md', '# notes');

    const outcome = await ingestObject(deps, { key, version: 'v' });

    expect(outcome).toMatchObject({ status: 'rejected', reason: expect.stringMatching(reason) });
    expect(sent).toEqual([]);
  });
});
