import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  GetObjectCommand,
  HeadObjectCommand,
  NoSuchBucket,
  NoSuchKey,
  NotFound,
  PutObjectCommand,
  paginateListObjectsV2,
  type S3Client,
  S3ServiceException,
  UploadPartCommand,
  UploadPartCopyCommand,
} from '@aws-sdk/client-s3';
import { mapLimit } from '../../lib/map-limit.js';
import { BlobChangedError, NotFoundError } from '../../model/errors.js';
import type { BlobPiece, BlobRead, BlobStore } from '../../ports/ports.js';

export interface S3BlobStoreOptions {
  client: S3Client;
  bucket: string;
  /** Keys per ListObjectsV2 page; S3's 1000 when unset. */
  listPageSize?: number;
}

/** Part size of {@link S3BlobStore.putStream}: above S3's 5 MiB minimum, small enough to hold. */
export const STREAM_PART_BYTES = 8 * 1024 * 1024;

/** S3's smallest part of a multipart upload (all but the last) and its largest. */
const MIN_PART_BYTES = 5 * 1024 * 1024;
/** Calls in flight at once while composing an object (sizes asked, small stretches read ahead). */
const COMPOSE_CONCURRENCY = 8;
const MAX_PART_BYTES = 5 * 1024 * 1024 * 1024;

/**
 * The bucket as a {@link BlobStore}. Keys are plain (decoded) S3 keys: callers that got a key
 * from an S3 event must URL-decode it first (`+` is a space).
 */
export class S3BlobStore implements BlobStore {
  readonly bucket: string;
  private readonly client: S3Client;
  private readonly listPageSize: number | undefined;

  constructor({ client, bucket, listPageSize }: S3BlobStoreOptions) {
    this.client = client;
    this.bucket = bucket;
    this.listPageSize = listPageSize;
  }

  async get(key: string): Promise<Uint8Array | undefined> {
    try {
      const out = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: key }));
      return out.Body ? await out.Body.transformToByteArray() : new Uint8Array();
    } catch (err) {
      if (isMissingKey(err)) return undefined;
      throw err;
    }
  }

  async put(key: string, body: Uint8Array | string, contentType?: string): Promise<void> {
    await this.client.send(
      new PutObjectCommand({
        Bucket: this.bucket,
        Key: key,
        Body: body,
        ContentType: contentType ?? (typeof body === 'string' ? 'text/plain; charset=utf-8' : undefined),
      }),
    );
  }

  /**
   * A multipart upload, one part per {@link STREAM_PART_BYTES} of the body (S3 wants every part
   * but the last ≥ 5 MiB); a body smaller than one part is a single PutObject. A failure aborts
   * the upload so no partial object or orphaned parts remain.
   */
  async putStream(
    key: string,
    body: AsyncIterable<Uint8Array | string>,
    contentType?: string,
  ): Promise<void> {
    const encoder = new TextEncoder();
    const type = contentType ?? 'text/plain; charset=utf-8';
    let pending: Uint8Array[] = [];
    let pendingBytes = 0;
    const take = (): Buffer => {
      const part = Buffer.concat(pending, pendingBytes);
      pending = [];
      pendingBytes = 0;
      return part;
    };
    let uploadId: string | undefined;
    const parts: { ETag?: string; PartNumber: number }[] = [];
    const upload = async (part: Buffer) => {
      if (uploadId === undefined) {
        const created = await this.client.send(
          new CreateMultipartUploadCommand({ Bucket: this.bucket, Key: key, ContentType: type }),
        );
        uploadId = created.UploadId!;
      }
      const PartNumber = parts.length + 1;
      const out = await this.client.send(
        new UploadPartCommand({ Bucket: this.bucket, Key: key, UploadId: uploadId, PartNumber, Body: part }),
      );
      parts.push({ ETag: out.ETag, PartNumber });
    };
    try {
      for await (const chunk of body) {
        const bytes = typeof chunk === 'string' ? encoder.encode(chunk) : chunk;
        pending.push(bytes);
        pendingBytes += bytes.byteLength;
        if (pendingBytes >= STREAM_PART_BYTES) await upload(take());
      }
      if (uploadId === undefined) {
        await this.client.send(
          new PutObjectCommand({ Bucket: this.bucket, Key: key, Body: take(), ContentType: type }),
        );
        return;
      }
      if (pendingBytes > 0) await upload(take());
      await this.client.send(
        new CompleteMultipartUploadCommand({
          Bucket: this.bucket,
          Key: key,
          UploadId: uploadId,
          MultipartUpload: { Parts: parts },
        }),
      );
    } catch (error) {
      if (uploadId !== undefined) {
        await this.client
          .send(new AbortMultipartUploadCommand({ Bucket: this.bucket, Key: key, UploadId: uploadId }))
          .catch(() => undefined);
      }
      throw error;
    }
  }

  /**
   * A multipart upload whose parts are the pieces: a stretch of an object of at least 5 MiB is a
   * part copied inside S3 (UploadPartCopy), never read here; smaller stretches, text and bytes
   * are gathered (read by ranged GETs) into parts of at least 5 MiB (S3's minimum for every part
   * but the last). The whole under 5 MiB is one PutObject. A failure aborts the upload.
   */
  async compose(key: string, pieces: readonly BlobPiece[], contentType?: string): Promise<void> {
    const encoder = new TextEncoder();
    type Stretch = { bytes: Uint8Array } | { key: string; start: number; end: number };
    const stretches: Stretch[] = [];
    // Each object's size, asked once, several at once (a piece names an object, often many times).
    const named = [
      ...new Set(pieces.flatMap((piece) => (typeof piece === 'object' && 'key' in piece ? [piece.key] : []))),
    ];
    const sizes = new Map<string, number | undefined>();
    await mapLimit(named, COMPOSE_CONCURRENCY, async (name) => {
      sizes.set(name, await this.sizeOf(name));
    });
    for (const piece of pieces) {
      if (typeof piece === 'string') stretches.push({ bytes: encoder.encode(piece) });
      else if (piece instanceof Uint8Array) stretches.push({ bytes: piece });
      else {
        const size = sizes.get(piece.key);
        if (size === undefined) throw new NotFoundError(`s3://${this.bucket}/${piece.key} does not exist`);
        const start = Math.min(piece.start ?? 0, size);
        const end = Math.min(piece.end ?? size, size);
        if (end > start) stretches.push({ key: piece.key, start, end });
      }
    }
    const type = contentType ?? 'application/octet-stream';
    let uploadId: string | undefined;
    const parts: { ETag?: string; PartNumber: number }[] = [];
    let pending: Uint8Array[] = [];
    let pendingBytes = 0;
    const begin = async () => {
      if (uploadId !== undefined) return uploadId;
      const created = await this.client.send(
        new CreateMultipartUploadCommand({ Bucket: this.bucket, Key: key, ContentType: type }),
      );
      uploadId = created.UploadId!;
      return uploadId;
    };
    // Parts are numbered in order and uploaded (or copied) several at once: a file of hundreds
    // of parts waits a round trip for every few. A gathered part's bytes are held until it lands,
    // so a compose holds at most COMPOSE_CONCURRENCY of them (each under 13 MiB: 8 MiB gathered
    // and a stretch too small to copy), whatever the file's size. The first to fail fails the whole.
    const inFlight = new Set<Promise<void>>();
    let failed: unknown;
    const upload = async (send: (UploadId: string, PartNumber: number) => Promise<string | undefined>) => {
      const UploadId = await begin();
      const PartNumber = parts.length + 1;
      parts.push({ PartNumber });
      while (inFlight.size >= COMPOSE_CONCURRENCY) await Promise.race(inFlight);
      if (failed !== undefined) throw failed;
      const sent = send(UploadId, PartNumber).then(
        (ETag) => {
          parts[PartNumber - 1] = { ETag, PartNumber };
        },
        (error: unknown) => {
          failed ??= error;
        },
      );
      inFlight.add(sent);
      void sent.finally(() => inFlight.delete(sent));
    };
    const uploaded = async () => {
      await Promise.all(inFlight);
      if (failed !== undefined) throw failed;
    };
    const flush = async () => {
      if (pendingBytes === 0) return;
      const body = Buffer.concat(pending, pendingBytes);
      pending = [];
      pendingBytes = 0;
      await upload(async (UploadId, PartNumber) => {
        const out = await this.client.send(
          new UploadPartCommand({ Bucket: this.bucket, Key: key, UploadId, PartNumber, Body: body }),
        );
        return out.ETag;
      });
    };
    const gather = async (bytes: Uint8Array) => {
      pending.push(bytes);
      pendingBytes += bytes.byteLength;
      if (pendingBytes >= STREAM_PART_BYTES) await flush();
    };
    // Stretches too small to copy are read ahead, several at once, and gathered in order.
    const small = (stretch: Stretch) => !('bytes' in stretch) && stretch.end - stretch.start < MIN_PART_BYTES;
    const reads = new Map<number, Promise<Uint8Array>>();
    let ahead = 0;
    const readAhead = () => {
      for (; ahead < stretches.length && reads.size < COMPOSE_CONCURRENCY; ahead += 1) {
        const stretch = stretches[ahead]!;
        if (!small(stretch) || 'bytes' in stretch) continue;
        const read = this.range(stretch.key, stretch.start, stretch.end);
        read.catch(() => undefined);
        reads.set(ahead, read);
      }
    };
    try {
      for (const [index, stretch] of stretches.entries()) {
        readAhead();
        if ('bytes' in stretch) {
          await gather(stretch.bytes);
          continue;
        }
        const read = reads.get(index);
        if (read) {
          reads.delete(index);
          await gather(await read);
          continue;
        }
        let { start } = stretch;
        // Gathered bytes under the minimum take the stretch's head first, so they make a part.
        if (pendingBytes > 0 && pendingBytes < MIN_PART_BYTES) {
          const take = Math.min(stretch.end, start + (MIN_PART_BYTES - pendingBytes));
          await gather(await this.range(stretch.key, start, take));
          start = take;
        }
        if (stretch.end - start < MIN_PART_BYTES) {
          if (stretch.end > start) await gather(await this.range(stretch.key, start, stretch.end));
          continue;
        }
        await flush();
        for (let at = start; at < stretch.end; ) {
          const to = Math.min(stretch.end, at + MAX_PART_BYTES);
          const range = `bytes=${at}-${to - 1}`;
          await upload(async (UploadId, PartNumber) => {
            const out = await this.client.send(
              new UploadPartCopyCommand({
                Bucket: this.bucket,
                Key: key,
                UploadId,
                PartNumber,
                CopySource: `${this.bucket}/${encodeURIComponent(stretch.key)}`,
                CopySourceRange: range,
              }),
            );
            return out.CopyPartResult?.ETag;
          });
          at = to;
        }
      }
      if (uploadId === undefined) {
        await this.client.send(
          new PutObjectCommand({
            Bucket: this.bucket,
            Key: key,
            Body: Buffer.concat(pending, pendingBytes),
            ContentType: type,
          }),
        );
        return;
      }
      await flush();
      await uploaded();
      await this.client.send(
        new CompleteMultipartUploadCommand({
          Bucket: this.bucket,
          Key: key,
          UploadId: uploadId,
          MultipartUpload: { Parts: parts },
        }),
      );
    } catch (error) {
      // The parts in flight end before the upload is aborted (a part that lands after the abort
      // would be kept, and billed, by S3).
      await Promise.all(inFlight);
      if (uploadId !== undefined) {
        await this.client
          .send(new AbortMultipartUploadCommand({ Bucket: this.bucket, Key: key, UploadId: uploadId }))
          .catch(() => undefined);
      }
      throw error;
    }
  }

  /** An object's size; undefined when it does not exist. */
  private async sizeOf(key: string): Promise<number | undefined> {
    try {
      const head = await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: key }));
      return head.ContentLength ?? 0;
    } catch (err) {
      if (isMissingKey(err)) return undefined;
      throw err;
    }
  }

  /** Bytes [start, end) of an object. */
  private async range(key: string, start: number, end: number): Promise<Uint8Array> {
    const out = await this.client.send(
      new GetObjectCommand({ Bucket: this.bucket, Key: key, Range: `bytes=${start}-${end - 1}` }),
    );
    return out.Body ? await out.Body.transformToByteArray() : new Uint8Array();
  }

  /** Every key under `prefix`, all pages, in S3's (UTF-8 binary) order. */
  async list(prefix: string): Promise<string[]> {
    const keys: string[] = [];
    for await (const page of paginateListObjectsV2(
      { client: this.client, ...(this.listPageSize === undefined ? {} : { pageSize: this.listPageSize }) },
      { Bucket: this.bucket, Prefix: prefix },
    )) {
      for (const object of page.Contents ?? []) if (object.Key !== undefined) keys.push(object.Key);
    }
    return keys;
  }

  /**
   * A GetObject from `start` on (a ranged GET `bytes=<start>-`, or to `end`), streamed without holding the
   * object (datasets can be large); the version is the object's ETag, and a read at a version
   * sends it as `If-Match`, so a replaced object fails (412) rather than mixing two uploads.
   */
  async read(
    key: string,
    options: { start?: number; end?: number; version?: string } = {},
  ): Promise<BlobRead | undefined> {
    const start = options.start ?? 0;
    // An empty range: nothing to read, but the object's size and version all the same.
    if (options.end !== undefined && options.end <= start) return this.emptyFrom(key, options.version);
    // `bytes=<first>-<last>`: the last byte is inclusive.
    const last = options.end === undefined ? '' : String(options.end - 1);
    try {
      const out = await this.client.send(
        new GetObjectCommand({
          Bucket: this.bucket,
          Key: key,
          ...(start > 0 || last !== '' ? { Range: `bytes=${start}-${last}` } : {}),
          ...(options.version === undefined ? {} : { IfMatch: options.version }),
        }),
      );
      // `bytes <first>-<last>/<size>` for a range; else the whole object's length.
      const size = Number(/\/(\d+)$/.exec(out.ContentRange ?? '')?.[1] ?? out.ContentLength ?? 0);
      // In Node the SDK's Body is an IncomingMessage (a Readable), which is async-iterable.
      const body = (out.Body ?? (async function* () {})()) as AsyncIterable<Uint8Array>;
      return { size, version: out.ETag ?? '', body };
    } catch (err) {
      if (isMissingKey(err)) return undefined;
      const status = (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
      if (status === 412)
        throw new BlobChangedError(key, `s3://${this.bucket}/${key} was replaced while it was being read`);
      // A start at or past the end: nothing left to read.
      if (status === 416) return this.emptyFrom(key, options.version);
      throw err;
    }
  }

  /** The object's size and version, with nothing to read (a read that starts at its end). */
  private async emptyFrom(key: string, version: string | undefined): Promise<BlobRead | undefined> {
    try {
      const head = await this.client.send(
        new HeadObjectCommand({
          Bucket: this.bucket,
          Key: key,
          ...(version === undefined ? {} : { IfMatch: version }),
        }),
      );
      return { size: head.ContentLength ?? 0, version: head.ETag ?? '', body: (async function* () {})() };
    } catch (err) {
      if (isMissingKey(err)) return undefined;
      if ((err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode === 412)
        throw new BlobChangedError(key);
      throw err;
    }
  }
}

/**
 * NoSuchKey (GetObject) or a bare 404 (HEAD-style errors carry no body, so no code). A missing
 * bucket is a misconfiguration, not a missing object, and still throws.
 */
function isMissingKey(err: unknown): boolean {
  if (err instanceof NoSuchKey || err instanceof NotFound) return true;
  if (!(err instanceof S3ServiceException) || err instanceof NoSuchBucket) return false;
  return err.$metadata?.httpStatusCode === 404;
}
