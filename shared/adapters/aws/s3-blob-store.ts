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
} from '@aws-sdk/client-s3';
import { BlobChangedError } from '../../model/errors.js';
import type { BlobRead, BlobStore } from '../../ports/ports.js';

export interface S3BlobStoreOptions {
  client: S3Client;
  bucket: string;
  /** Keys per ListObjectsV2 page; S3's 1000 when unset. */
  listPageSize?: number;
}

/** Part size of {@link S3BlobStore.putStream}: above S3's 5 MiB minimum, small enough to hold. */
export const STREAM_PART_BYTES = 8 * 1024 * 1024;

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
   * A GetObject from `start` on (a ranged GET `bytes=<start>-`), streamed without holding the
   * object (datasets can be large); the version is the object's ETag, and a read at a version
   * sends it as `If-Match`, so a replaced object fails (412) rather than mixing two uploads.
   */
  async read(key: string, options: { start?: number; version?: string } = {}): Promise<BlobRead | undefined> {
    const start = options.start ?? 0;
    try {
      const out = await this.client.send(
        new GetObjectCommand({
          Bucket: this.bucket,
          Key: key,
          ...(start > 0 ? { Range: `bytes=${start}-` } : {}),
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
