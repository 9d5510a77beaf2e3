/**
 * The ChunkStore contract: what the ingest of a dataset in chunks relies on — a chunk is held
 * by one ingest at a time and taken up again once its holder's lease lapses, with how far the
 * holder got; a done chunk is never taken again; an item id belongs to the first row that
 * claimed it. In memory and in DynamoDB alike.
 */
import { describe, expect, it } from 'vitest';
import { DynamoChunkStore } from '../../../shared/adapters/aws/dynamo-chunk-store.js';
import { MemoryChunkStore } from '../../../shared/adapters/local/memory-chunk-store.js';
import type { ChunkStore } from '../../../shared/ports/ports.js';
import { awsStack, fresh } from './fixtures.js';

const aws = awsStack('contract-chunks');
const clock = { ms: 1_700_000_000_000 };
const now = () => clock.ms;

const adapters: [string, () => ChunkStore][] = [
  ['memory', () => new MemoryChunkStore(now)],
  [
    'dynamodb',
    () => new DynamoChunkStore({ client: aws().clients.doc, tableName: aws().res.table, ttlDays: 1, now }),
  ],
];

describe.each(adapters)('ChunkStore contract: %s', { timeout: 60_000 }, (_name, make) => {
  it('holds a chunk for one ingest at a time; a lapsed lease is taken again with the progress made', async () => {
    const store = make();
    const run = fresh('chunks');
    expect(await store.claimChunk(run, 3, 60_000)).toEqual({ claimed: true, handed: 0 });
    expect(await store.claimChunk(run, 3, 60_000)).toEqual({ claimed: false, why: 'held' });
    // Another chunk of the run, and the same chunk of another run, are free.
    expect(await store.claimChunk(run, 4, 60_000)).toEqual({ claimed: true, handed: 0 });
    expect(await store.claimChunk(fresh('other'), 3, 60_000)).toEqual({ claimed: true, handed: 0 });

    await store.chunkProgress(run, 3, 1_000);
    clock.ms += 60_001;
    const again = await Promise.all([store.claimChunk(run, 3, 60_000), store.claimChunk(run, 3, 60_000)]);
    expect(again.filter((claim) => claim.claimed)).toEqual([{ claimed: true, handed: 1_000 }]);

    await store.chunkProgress(run, 3, 2_500, true);
    clock.ms += 3_600_000;
    expect(await store.claimChunk(run, 3, 60_000)).toEqual({ claimed: false, why: 'done' });
  });

  it('gives each item id to the first row that claims it; a row claiming again keeps it', async () => {
    const store = make();
    const run = fresh('ids');
    const ids = Array.from({ length: 130 }, (_, i) => ({ id: `item ${i} / é`, row: i + 1 }));
    expect(await store.claimIds(run, ids)).toEqual(new Map());
    // The next chunk: two ids seen before, one new; then the first chunk done again.
    const later = await store.claimIds(run, [
      { id: 'item 7 / é', row: 500 },
      { id: 'item 129 / é', row: 501 },
      { id: 'fresh', row: 502 },
    ]);
    expect(later).toEqual(
      new Map([
        ['item 7 / é', 8],
        ['item 129 / é', 130],
      ]),
    );
    expect(await store.claimIds(run, ids.slice(0, 10))).toEqual(new Map());
    expect(await store.claimIds(run, [{ id: 'fresh', row: 900 }])).toEqual(new Map([['fresh', 502]]));
    // Another run's ids are its own.
    expect(await store.claimIds(fresh('other'), [{ id: 'fresh', row: 1 }])).toEqual(new Map());
  });
});
