/**
 * The BlobStore contract: what ingest, the reports and the spilled messages rely on, held by a
 * folder and an S3 bucket alike.
 */
import { describe, expect, it } from 'vitest';
import { S3BlobStore } from '../../../shared/adapters/aws/s3-blob-store.js';
import { FolderBlobStore } from '../../../shared/adapters/local/folder-blob-store.js';
import { BlobChangedError, NotFoundError } from '../../../shared/model/errors.js';
import type { BlobStore } from '../../../shared/ports/ports.js';
import { chunksOf, tempDir } from '../../helpers.js';
import { awsStack, fresh } from './fixtures.js';

const aws = awsStack('contract-blobs');

const adapters: [string, () => Promise<BlobStore>][] = [
  ['local', async () => new FolderBlobStore(await tempDir('assay-contract-blobs-'))],
  [
    's3',
    async () => new S3BlobStore({ client: aws().clients.s3, bucket: aws().res.bucket, listPageSize: 2 }),
  ],
];

const text = (bytes: Uint8Array | undefined) =>
  bytes === undefined ? undefined : new TextDecoder().decode(bytes);

describe.each(adapters)('BlobStore contract: %s', { timeout: 60_000 }, (_name, make) => {
  it('reads a key that was never written as undefined', async () => {
    const blobs = await make();
    expect(await blobs.get(`${fresh('nope')}/missing.json`)).toBeUndefined();
  });

  it('round-trips text and bytes under keys with spaces and non-ASCII characters; a put replaces', async () => {
    const blobs = await make();
    const base = fresh('round');
    const bytes = new Uint8Array([0, 1, 2, 254, 255]);
    await blobs.put(`${base}/a b/ünï.txt`, 'héllo wörld', 'text/plain; charset=utf-8');
    await blobs.put(`${base}/raw.bin`, bytes);
    expect(text(await blobs.get(`${base}/a b/ünï.txt`))).toBe('héllo wörld');
    expect(Array.from((await blobs.get(`${base}/raw.bin`)) ?? [])).toEqual(Array.from(bytes));

    await blobs.put(`${base}/a b/ünï.txt`, 'second');
    expect(text(await blobs.get(`${base}/a b/ünï.txt`))).toBe('second');
    await blobs.put(`${base}/empty.txt`, '');
    expect((await blobs.get(`${base}/empty.txt`))?.byteLength).toBe(0);
  });

  it('lists every key under a prefix, across pages, sorted; an unknown prefix lists nothing', async () => {
    const blobs = await make();
    const base = fresh('list');
    const keys = ['c.txt', 'a.txt', 'sub/deeper/z.json', 'b.txt', 'sub/x.json'].map((k) => `${base}/${k}`);
    for (const key of keys) await blobs.put(key, key);
    await blobs.put(`${base}-sibling/a.txt`, 'not under the prefix');

    expect(await blobs.list(`${base}/`)).toEqual([...keys].sort());
    expect(await blobs.list(`${base}/sub/`)).toEqual([`${base}/sub/deeper/z.json`, `${base}/sub/x.json`]);
    expect(await blobs.list(`${fresh('none')}/`)).toEqual([]);
  });

  it('writes a streamed body whole, and a failed stream leaves no object', async () => {
    const blobs = await make();
    const base = fresh('stream');
    const body = 'line\n'.repeat(5_000);
    await blobs.putStream(`${base}/report.csv`, chunksOf(body, 4_096), 'text/csv');
    expect(text(await blobs.get(`${base}/report.csv`))).toBe(body);

    async function* broken(): AsyncGenerator<string> {
      yield 'half a file';
      throw new Error('the producer failed');
    }
    await expect(blobs.putStream(`${base}/broken.csv`, broken())).rejects.toThrow('the producer failed');
    expect(await blobs.get(`${base}/broken.csv`)).toBeUndefined();
    expect(await blobs.list(`${base}/`)).toEqual([`${base}/report.csv`]);
  });

  it('reads an object from any byte on, with its size and version; a replaced one is refused at its old version', async () => {
    const blobs = await make();
    const key = `${fresh('read')}/data.csv`;
    await blobs.put(key, 'héllo wörld');
    const whole = (await blobs.read(key))!;
    expect(whole.size).toBe(13);
    expect(text(await bytesOf(whole.body))).toBe('héllo wörld');
    const tail = (await blobs.read(key, { start: 7, version: whole.version }))!;
    expect(tail).toMatchObject({ size: 13, version: whole.version });
    expect(text(await bytesOf(tail.body))).toBe('wörld');
    expect(await bytesOf((await blobs.read(key, { start: 13 }))!.body)).toHaveLength(0);
    expect(await blobs.read(`${fresh('nope')}/x.csv`)).toBeUndefined();
    await new Promise((resolve) => setTimeout(resolve, 5));
    await blobs.put(key, 'something else, longer');
    await expect(blobs.read(key, { start: 1, version: whole.version })).rejects.toBeInstanceOf(
      BlobChangedError,
    );
  });

  it('composes an object of text, bytes and stretches of objects, large stretches included', async () => {
    const blobs = await make();
    const base = fresh('compose');
    // Two parts of 6 MiB and one small: the large stretches are copied, the rest gathered.
    const big = (fill: number) => new Uint8Array(6 * 1024 * 1024).fill(fill);
    await blobs.put(`${base}/a.bin`, big(97));
    await blobs.put(`${base}/b.bin`, big(98));
    await blobs.put(`${base}/c.txt`, 'small part');
    await blobs.compose(`${base}/whole.bin`, [
      'head|',
      { key: `${base}/a.bin` },
      new Uint8Array([124]),
      { key: `${base}/c.txt`, start: 6 },
      { key: `${base}/b.bin`, start: 1024, end: 1024 + 6 * 1024 * 1024 - 2048 },
      { key: `${base}/c.txt`, start: 3, end: 3 },
      '|tail',
    ]);
    const whole = Buffer.from((await blobs.get(`${base}/whole.bin`))!);
    const expected = Buffer.concat([
      Buffer.from('head|'),
      Buffer.from(big(97)),
      Buffer.from('|'),
      Buffer.from('part'),
      Buffer.from(big(98).subarray(0, 6 * 1024 * 1024 - 2048)),
      Buffer.from('|tail'),
    ]);
    expect(whole.length).toBe(expected.length);
    expect(whole.equals(expected)).toBe(true);
    // A small whole, and a piece that does not exist (nothing written).
    await blobs.compose(`${base}/small.txt`, ['x', { key: `${base}/c.txt`, end: 5 }, 'y']);
    expect(text(await blobs.get(`${base}/small.txt`))).toBe('xsmally');
    await expect(blobs.compose(`${base}/none.txt`, ['x', { key: `${base}/missing` }])).rejects.toBeInstanceOf(
      NotFoundError,
    );
    expect(await blobs.get(`${base}/none.txt`)).toBeUndefined();
  });

  it('composes more large stretches than are copied at once, each part in its place', async () => {
    const blobs = await make();
    const base = fresh('compose-large');
    const size = 5 * 1024 * 1024;
    for (const fill of [97, 98, 99]) await blobs.put(`${base}/${fill}.bin`, new Uint8Array(size).fill(fill));
    // Ten parts copied, more than go at once, in an order no sort would give back.
    const order = [98, 97, 99, 99, 97, 98, 98, 99, 97, 98];
    await blobs.compose(
      `${base}/whole.bin`,
      order.map((fill) => ({ key: `${base}/${fill}.bin` })),
    );
    const whole = Buffer.from((await blobs.get(`${base}/whole.bin`))!);
    expect(whole.length).toBe(order.length * size);
    expect(order.map((_, i) => whole[i * size])).toEqual(order);
    expect(order.map((_, i) => whole[(i + 1) * size - 1])).toEqual(order);
  });

  it('composes many small stretches of a few objects in order', async () => {
    const blobs = await make();
    const base = fresh('compose-many');
    const letters = 'abcdefghijklmnopqrstuvwxyz';
    await blobs.put(`${base}/x.txt`, letters);
    await blobs.put(`${base}/y.txt`, letters.toUpperCase());
    // Forty stretches, more than are read at once, between texts: each in its place.
    const pieces = Array.from({ length: 40 }, (_, i) => [
      `${i}:`,
      { key: `${base}/${i % 2 ? 'y' : 'x'}.txt`, start: i % 26, end: (i % 26) + 1 },
    ]).flat();
    await blobs.compose(`${base}/many.txt`, pieces);
    const expected = Array.from({ length: 40 }, (_, i) => {
      const letter = letters[i % 26]!;
      return `${i}:${i % 2 ? letter.toUpperCase() : letter}`;
    }).join('');
    expect(text(await blobs.get(`${base}/many.txt`))).toBe(expected);
  });
});

async function bytesOf(body: AsyncIterable<Uint8Array>): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of body) chunks.push(chunk);
  return Buffer.concat(chunks);
}
