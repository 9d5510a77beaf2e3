/**
 * The ChunkStore contract: what the ingest of a dataset in chunks relies on — a chunk is held
 * by one ingest at a time and taken up again once its holder's lease lapses, with how far the
 * holder got; a done chunk is never taken again; an item id belongs to the lowest row that
 * claimed it, whatever the order, and both sides of a claim learn the outcome; a chunk's noted
 * duplicates and claimed mark are kept. In memory and in DynamoDB alike.
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

  it('gives each item id to the lowest row that claims it, in any order; a row claiming again keeps it', async () => {
    const store = make();
    const run = fresh('ids');
    const ids = Array.from({ length: 130 }, (_, i) => ({ id: `item ${i} / é`, row: i + 1 }));
    expect(await store.claimIds(run, 0, ids)).toEqual({ earlier: new Map(), displaced: [] });
    // A later chunk: two ids seen before, one new; then the first chunk done again.
    const later = await store.claimIds(run, 4, [
      { id: 'item 7 / é', row: 500 },
      { id: 'item 129 / é', row: 501 },
      { id: 'fresh', row: 502 },
    ]);
    expect(later).toEqual({
      earlier: new Map([
        ['item 7 / é', 8],
        ['item 129 / é', 130],
      ]),
      displaced: [],
    });
    expect(await store.claimIds(run, 0, ids.slice(0, 10))).toEqual({ earlier: new Map(), displaced: [] });
    // A chunk before chunk 4 claims after it: it takes "fresh" from row 502, and chunk 4 hears of it.
    expect(await store.claimIds(run, 2, [{ id: 'fresh', row: 300 }])).toEqual({
      earlier: new Map(),
      displaced: [{ id: 'fresh', row: 502, chunk: 4 }],
    });
    expect((await store.claimIds(run, 6, [{ id: 'fresh', row: 900 }])).earlier).toEqual(
      new Map([['fresh', 300]]),
    );
    expect(await store.holders(run, ['fresh', 'item 7 / é', 'nobody'])).toEqual(
      new Map([
        ['fresh', 300],
        ['item 7 / é', 8],
      ]),
    );
    // Another run's ids are its own.
    expect((await store.claimIds(fresh('other'), 0, [{ id: 'fresh', row: 1 }])).earlier).toEqual(new Map());
  });

  it("keeps a chunk's duplicates, its claimed mark and its task; says when every chunk before one has claimed", async () => {
    const store = make();
    const run = fresh('marks');
    await store.noteDuplicates(run, 3, [
      { id: 'a', row: 40 },
      { id: 'b', row: 41 },
    ]);
    await store.noteDuplicates(run, 3, [{ id: 'a', row: 40 }]);
    await store.noteDuplicates(run, 4, [{ id: 'c', row: 50 }]);
    expect((await store.duplicatesIn(run, 3)).sort((x, y) => x.row - y.row)).toEqual([
      { id: 'a', row: 40 },
      { id: 'b', row: 41 },
    ]);
    expect(await store.duplicatesIn(run, 5)).toEqual([]);

    expect(await store.claimedBefore(run, 0)).toEqual({ claimed: true, ended: false });
    expect(await store.claimChunk(run, 1, 60_000)).toMatchObject({ claimed: true });
    await store.idsClaimed(run, 1, { ended: false, task: '{"chunk":1}' });
    expect(await store.claimedBefore(run, 2)).toEqual({ claimed: false, ended: false });
    expect(await store.waitingTask(run, 1)).toBe('{"chunk":1}');
    expect(await store.waitingTask(run, 0)).toBeUndefined();
    // Given up, the chunk is taken at once by another.
    await store.releaseChunk(run, 1);
    expect(await store.claimChunk(run, 1, 60_000)).toEqual({ claimed: true, handed: 0 });
    await store.idsClaimed(run, 0, { ended: true, task: '{"chunk":0}' });
    expect(await store.claimedBefore(run, 2)).toEqual({ claimed: true, ended: true });
    expect(await store.claimedBefore(run, 1)).toEqual({ claimed: true, ended: true });
    await store.chunkProgress(run, 1, 10, true);
    expect(await store.waitingTask(run, 1)).toBeUndefined();
  });
});
