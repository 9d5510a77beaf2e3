/**
 * In-memory S3 buckets behind the SDK's request handler, speaking S3's REST-XML (virtual-hosted
 * or path-style). Operations: CreateBucket, HeadBucket, DeleteBucket,
 * PutBucketNotificationConfiguration (queue targets, prefix/suffix filters; the s3:TestEvent and
 * ObjectCreated events go to the simulated SQS), PutObject, GetObject (with `Range: bytes=a-b`,
 * `bytes=a-` and `bytes=-n`), HeadObject, CopyObject, DeleteObject, DeleteObjects,
 * ListObjectsV2 (prefix, delimiter, start-after, pagination), CreateMultipartUpload,
 * UploadPart, UploadPartCopy (with `x-amz-copy-source-range`), CompleteMultipartUpload (parts in
 * order, ETags matching, every part but the last ≥ 5 MiB, else InvalidPart, InvalidPartOrder or
 * EntityTooSmall), AbortMultipartUpload. Errors as S3 sends them (`NoSuchKey`, `NoSuchBucket`,
 * `NoSuchUpload`, a bare 404 for HEAD, `InvalidRange` 416, `BadDigest`).
 *
 * Bodies are kept in memory as Buffers. Not modelled: versioning, conditional requests
 * (`If-Match`…), object tags and ACLs, storage classes, checksums on GET, the 3,500 PUT /
 * 5,500 GET per second per prefix limits.
 *
 * Counting: requests by S3's price tiers (PUT, COPY, POST, LIST; GET and the rest; DELETE and
 * abort free), bytes in and out, bytes stored (now and at most).
 */
import { createHash, randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { crc32 } from 'node:zlib';
import { compareUtf8 } from './dynamo-values.js';
import {
  type Clock,
  Latency,
  type LatencyOptions,
  type ServiceResponse,
  type SimRequest,
  type SimService,
} from './http.js';
import { SortedKeys } from './sorted-keys.js';

const MIB = 1024 * 1024;
const MIN_PART_BYTES = 5 * MIB;
const MAX_PART_NUMBER = 10_000;

/** Anything that takes the bucket's event notifications (the simulated SQS). */
export interface NotificationTarget {
  deliver(queueArn: string, body: string): void;
}

export interface SimS3Options {
  region?: string;
  /** Latency of every request. Default 20 ms + up to 10 ms. */
  latency?: LatencyOptions;
  /** Transfer rate of one request's body, bytes per ms. Default 100,000 (100 MB/s). */
  bytesPerMs?: number;
  /** USD per 1,000 requests: tier 1 (PUT, COPY, POST, LIST) and tier 2 (GET and the rest). Defaults: S3 Standard in us-east-1. */
  prices?: { tier1PerThousand?: number; tier2PerThousand?: number };
  seed?: number;
}

interface StoredObject {
  body: Buffer;
  etag: string;
  contentType: string;
  lastModified: number;
  metadata: Record<string, string>;
}

interface Upload {
  key: string;
  contentType: string;
  metadata: Record<string, string>;
  parts: Map<number, { body: Buffer; etag: string }>;
}

interface QueueTarget {
  id: string;
  arn: string;
  events: string[];
  prefix: string;
  suffix: string;
}

interface Bucket {
  name: string;
  objects: SortedKeys<StoredObject>;
  uploads: Map<string, Upload>;
  notifications: QueueTarget[];
}

/** A request S3 refuses: its code, HTTP status, message and extra XML members. */
export class S3Error extends Error {
  constructor(
    readonly code: string,
    readonly status: number,
    message: string,
    readonly extra: Record<string, string> = {},
  ) {
    super(message);
  }
}

export type S3RequestTier = 'tier1' | 'tier2' | 'free';

export interface S3Report {
  requests: Record<string, number>;
  byTier: Record<S3RequestTier, number>;
  usd: number;
  bytesIn: number;
  bytesOut: number;
  objects: number;
  bytesStored: number;
  maxBytesStored: number;
  openUploads: number;
  /** Bytes of the parts the open multipart uploads hold (uploaded or copied), not yet an object. */
  bytesInUploads: number;
}

const TIERS: Record<string, S3RequestTier> = {
  PutObject: 'tier1',
  CopyObject: 'tier1',
  UploadPart: 'tier1',
  UploadPartCopy: 'tier1',
  CreateMultipartUpload: 'tier1',
  CompleteMultipartUpload: 'tier1',
  ListObjectsV2: 'tier1',
  CreateBucket: 'tier1',
  PutBucketNotificationConfiguration: 'tier1',
  GetObject: 'tier2',
  HeadObject: 'tier2',
  HeadBucket: 'tier2',
  DeleteObject: 'free',
  DeleteObjects: 'free',
  AbortMultipartUpload: 'free',
  DeleteBucket: 'free',
};

/** What {@link SimS3.snapshot} gives: the buckets and their objects at one moment. */
export interface S3Snapshot {
  readonly buckets: readonly Bucket[];
}

function copyBucket(bucket: Bucket): Bucket {
  return {
    ...bucket,
    objects: bucket.objects.clone(),
    uploads: new Map(
      [...bucket.uploads].map(([id, upload]) => [id, { ...upload, parts: new Map(upload.parts) }]),
    ),
    notifications: [...bucket.notifications],
  };
}

export class SimS3 implements SimService {
  private readonly buckets = new Map<string, Bucket>();
  private readonly latency: Latency;
  private readonly bytesPerMs: number;
  private readonly region: string;
  private readonly prices: { tier1PerThousand: number; tier2PerThousand: number };
  private readonly requests = new Map<string, number>();
  private readonly tiers: Record<S3RequestTier, number> = { tier1: 0, tier2: 0, free: 0 };
  private bytesIn = 0;
  private bytesOut = 0;
  private bytesStored = 0;
  private maxBytesStored = 0;
  private sequencer = 0;
  private readonly observers: ((bucket: string, key: string) => void)[] = [];

  constructor(
    private readonly clock: Clock,
    private readonly notify: NotificationTarget | undefined,
    options: SimS3Options = {},
  ) {
    this.region = options.region ?? 'us-east-1';
    this.latency = new Latency(
      options.latency?.baseMs ?? 20,
      options.latency?.jitterMs ?? 10,
      options.seed ?? 3,
    );
    this.bytesPerMs = options.bytesPerMs ?? 100_000;
    this.prices = {
      tier1PerThousand: options.prices?.tier1PerThousand ?? 0.005,
      tier2PerThousand: options.prices?.tier2PerThousand ?? 0.0004,
    };
  }

  /** Creates a bucket directly (what CreateBucket does). */
  createBucket(name: string): void {
    if (!this.buckets.has(name)) {
      this.buckets.set(name, {
        name,
        objects: new SortedKeys(compareUtf8),
        uploads: new Map(),
        notifications: [],
      });
    }
  }

  /**
   * The buckets as they are now, for another SimS3 to {@link restore}: objects are never
   * changed in place, so the copy shares their bodies. Multipart uploads in progress are copied
   * part by part.
   */
  snapshot(): S3Snapshot {
    return { buckets: [...this.buckets.values()].map(copyBucket) };
  }

  /** Replaces every bucket by those of `snapshot` (its request counts start from zero). */
  restore(snapshot: S3Snapshot): void {
    this.buckets.clear();
    for (const bucket of snapshot.buckets) this.buckets.set(bucket.name, copyBucket(bucket));
  }

  /** Calls `listener` with each object's bucket and key as it is created (a put, a copy, a completed upload). */
  observe(listener: (bucket: string, key: string) => void): void {
    this.observers.push(listener);
  }

  /** An object's bytes (for tests and reports). */
  peek(bucket: string, key: string): Buffer | undefined {
    return this.buckets.get(bucket)?.objects.get(key)?.body;
  }

  /** What it holds now, bytes: its objects and its open uploads' parts (read at every switch by the heap probe). */
  heldBytes(): number {
    return this.bytesStored + this.bytesInUploads();
  }

  /** The bytes of its open uploads' parts, a part copied inside S3 included. */
  private bytesInUploads(): number {
    let held = 0;
    for (const bucket of this.buckets.values())
      for (const upload of bucket.uploads.values())
        for (const part of upload.parts.values()) held += part.body.length;
    return held;
  }

  report(): S3Report {
    let objects = 0;
    let openUploads = 0;
    for (const bucket of this.buckets.values()) {
      objects += bucket.objects.size;
      openUploads += bucket.uploads.size;
    }
    const bytesInUploads = this.bytesInUploads();
    return {
      requests: Object.fromEntries(this.requests),
      byTier: { ...this.tiers },
      usd:
        (this.tiers.tier1 * this.prices.tier1PerThousand + this.tiers.tier2 * this.prices.tier2PerThousand) /
        1000,
      bytesIn: this.bytesIn,
      bytesOut: this.bytesOut,
      objects,
      bytesStored: this.bytesStored,
      maxBytesStored: this.maxBytesStored,
      openUploads,
      bytesInUploads,
    };
  }

  async serve(request: SimRequest): Promise<ServiceResponse> {
    const { bucket, key } = this.address(request);
    const operation = operationOf(request.method, key, request.query, request.headers);
    this.requests.set(operation, (this.requests.get(operation) ?? 0) + 1);
    this.tiers[TIERS[operation] ?? 'tier2'] += 1;
    const inBytes = request.body.length;
    this.bytesIn += inBytes;
    await this.clock.sleep(this.latency.draw(inBytes / this.bytesPerMs));
    let response: ServiceResponse;
    try {
      response = this.run(operation, bucket, key, request);
    } catch (err) {
      if (!(err instanceof S3Error)) throw err;
      response = request.method === 'HEAD' ? { status: err.status } : errorResponse(err);
    }
    // The response's body takes its transfer time too.
    const outBytes =
      response.body instanceof Readable ? Number(response.headers?.['content-length'] ?? 0) : 0;
    if (outBytes > 0) {
      this.bytesOut += outBytes;
      await this.clock.sleep(outBytes / this.bytesPerMs);
    }
    return response;
  }

  private address(request: SimRequest): { bucket: string; key: string } {
    const virtual = /^(.+)\.s3[.-]/.exec(request.hostname);
    const path = request.path.startsWith('/') ? request.path.slice(1) : request.path;
    if (virtual) return { bucket: virtual[1]!, key: decodePath(path) };
    const slash = path.indexOf('/');
    return slash < 0
      ? { bucket: decodePath(path), key: '' }
      : { bucket: decodePath(path.slice(0, slash)), key: decodePath(path.slice(slash + 1)) };
  }

  private bucket(name: string): Bucket {
    const bucket = this.buckets.get(name);
    if (!bucket)
      throw new S3Error('NoSuchBucket', 404, 'The specified bucket does not exist', { BucketName: name });
    return bucket;
  }

  private run(operation: string, bucketName: string, key: string, request: SimRequest): ServiceResponse {
    const { headers, query, body } = request;
    switch (operation) {
      case 'CreateBucket':
        this.createBucket(bucketName);
        return { status: 200, headers: { location: `/${bucketName}` } };
      case 'HeadBucket':
        this.bucket(bucketName);
        return { status: 200, headers: { 'x-amz-bucket-region': this.region } };
      case 'DeleteBucket': {
        const bucket = this.bucket(bucketName);
        if (bucket.objects.size > 0)
          throw new S3Error('BucketNotEmpty', 409, 'The bucket you tried to delete is not empty');
        this.buckets.delete(bucketName);
        return { status: 204 };
      }
      case 'PutBucketNotificationConfiguration':
        return this.putNotifications(this.bucket(bucketName), body.toString('utf8'));
      case 'PutObject': {
        const bucket = this.bucket(bucketName);
        const bytes = payload(body, headers);
        this.put(bucket, key, bytes, headers['content-type'] ?? 'binary/octet-stream', metadataOf(headers));
        this.created(bucket, key, 'ObjectCreated:Put');
        return { status: 200, headers: { etag: bucket.objects.get(key)!.etag, ...echoChecksum(headers) } };
      }
      case 'CopyObject': {
        const bucket = this.bucket(bucketName);
        const source = this.copySource(headers['x-amz-copy-source']!);
        this.put(bucket, key, source.body, source.contentType, source.metadata);
        this.created(bucket, key, 'ObjectCreated:Copy');
        const copied = bucket.objects.get(key)!;
        return xml(
          200,
          `<CopyObjectResult><ETag>${xmlEscape(copied.etag)}</ETag><LastModified>${iso(copied.lastModified)}</LastModified></CopyObjectResult>`,
        );
      }
      case 'GetObject':
        return this.getObject(this.bucket(bucketName), key, headers.range);
      case 'HeadObject': {
        const object = this.object(this.bucket(bucketName), key);
        return { status: 200, headers: objectHeaders(object, object.body.length) };
      }
      case 'DeleteObject': {
        this.remove(this.bucket(bucketName), key);
        return { status: 204 };
      }
      case 'DeleteObjects':
        return this.deleteObjects(this.bucket(bucketName), body.toString('utf8'), headers);
      case 'ListObjectsV2':
        return this.list(this.bucket(bucketName), query);
      case 'CreateMultipartUpload': {
        const bucket = this.bucket(bucketName);
        const uploadId = randomUUID().replace(/-/g, '');
        bucket.uploads.set(uploadId, {
          key,
          contentType: headers['content-type'] ?? 'binary/octet-stream',
          metadata: metadataOf(headers),
          parts: new Map(),
        });
        return xml(
          200,
          `<InitiateMultipartUploadResult><Bucket>${xmlEscape(bucketName)}</Bucket><Key>${xmlEscape(key)}</Key><UploadId>${uploadId}</UploadId></InitiateMultipartUploadResult>`,
        );
      }
      case 'UploadPart':
      case 'UploadPartCopy': {
        const upload = this.upload(this.bucket(bucketName), query.uploadId!, key);
        const number = Number(query.partNumber);
        if (!(Number.isInteger(number) && number >= 1 && number <= MAX_PART_NUMBER)) {
          throw new S3Error(
            'InvalidArgument',
            400,
            'Part number must be an integer between 1 and 10000, inclusive',
            { ArgumentName: 'partNumber', ArgumentValue: String(query.partNumber) },
          );
        }
        let bytes: Buffer;
        if (operation === 'UploadPartCopy') {
          const source = this.copySource(headers['x-amz-copy-source']!).body;
          const range = headers['x-amz-copy-source-range'];
          if (range === undefined) bytes = source;
          else {
            const match = /^bytes=(\d+)-(\d+)$/.exec(range);
            if (!match || Number(match[2]) >= source.length || Number(match[1]) > Number(match[2])) {
              throw new S3Error('InvalidRange', 416, 'The requested range is not satisfiable', {
                RangeRequested: range,
                ActualObjectSize: String(source.length),
              });
            }
            bytes = source.subarray(Number(match[1]), Number(match[2]) + 1);
          }
        } else {
          bytes = payload(body, headers);
        }
        const etag = `"${md5(bytes)}"`;
        upload.parts.set(number, { body: Buffer.from(bytes), etag });
        return operation === 'UploadPart'
          ? { status: 200, headers: { etag, ...echoChecksum(headers) } }
          : xml(
              200,
              `<CopyPartResult><ETag>${xmlEscape(etag)}</ETag><LastModified>${iso(this.clock.now())}</LastModified></CopyPartResult>`,
            );
      }
      case 'CompleteMultipartUpload':
        return this.complete(this.bucket(bucketName), key, query.uploadId!, body.toString('utf8'));
      case 'AbortMultipartUpload': {
        const bucket = this.bucket(bucketName);
        this.upload(bucket, query.uploadId!, key);
        bucket.uploads.delete(query.uploadId!);
        return { status: 204 };
      }
      default:
        throw new S3Error('NotImplemented', 501, `${operation} is not modelled by the simulated S3`);
    }
  }

  private object(bucket: Bucket, key: string): StoredObject {
    const object = bucket.objects.get(key);
    if (!object) throw new S3Error('NoSuchKey', 404, 'The specified key does not exist.', { Key: key });
    return object;
  }

  private upload(bucket: Bucket, uploadId: string, key: string): Upload {
    const upload = bucket.uploads.get(uploadId);
    if (!upload || upload.key !== key) {
      throw new S3Error(
        'NoSuchUpload',
        404,
        'The specified upload does not exist. The upload ID may be invalid, or the upload may have been aborted or completed.',
        { UploadId: uploadId },
      );
    }
    return upload;
  }

  private copySource(header: string): StoredObject {
    const decoded = decodeURIComponent(header.split('?')[0]!).replace(/^\//, '');
    const slash = decoded.indexOf('/');
    return this.object(this.bucket(decoded.slice(0, slash)), decoded.slice(slash + 1));
  }

  private put(
    bucket: Bucket,
    key: string,
    body: Buffer,
    contentType: string,
    metadata: Record<string, string>,
    etag = `"${md5(body)}"`,
  ): void {
    if (key === '') throw new S3Error('InvalidRequest', 400, 'A key must be given');
    const before = bucket.objects.set(key, {
      body,
      etag,
      contentType,
      lastModified: this.clock.now(),
      metadata,
    });
    this.bytesStored += body.length - (before?.body.length ?? 0);
    this.maxBytesStored = Math.max(this.maxBytesStored, this.bytesStored);
  }

  private remove(bucket: Bucket, key: string): void {
    const before = bucket.objects.delete(key);
    if (before) this.bytesStored -= before.body.length;
  }

  private getObject(bucket: Bucket, key: string, range: string | undefined): ServiceResponse {
    const object = this.object(bucket, key);
    const size = object.body.length;
    let start = 0;
    let end = size - 1;
    let partial = false;
    if (range !== undefined) {
      const match = /^bytes=(\d*)-(\d*)$/.exec(range.trim());
      if (match && (match[1] !== '' || match[2] !== '')) {
        if (match[1] === '') {
          start = Math.max(0, size - Number(match[2]));
        } else {
          start = Number(match[1]);
          if (match[2] !== '') end = Math.min(end, Number(match[2]));
        }
        if (start >= size || (match[1] !== '' && match[2] !== '' && Number(match[2]) < start)) {
          throw new S3Error('InvalidRange', 416, 'The requested range is not satisfiable', {
            RangeRequested: range,
            ActualObjectSize: String(size),
          });
        }
        partial = true;
      }
    }
    const bytes = object.body.subarray(start, end + 1);
    return {
      status: partial ? 206 : 200,
      headers: {
        ...objectHeaders(object, bytes.length),
        ...(partial ? { 'content-range': `bytes ${start}-${end}/${size}` } : {}),
      },
      body: Readable.from([bytes], { objectMode: false }),
    };
  }

  private list(bucket: Bucket, query: Record<string, string | undefined>): ServiceResponse {
    if (query['list-type'] !== '2')
      throw new S3Error('NotImplemented', 501, 'ListObjects (version 1) is not modelled by the simulated S3');
    const prefix = query.prefix ?? '';
    const delimiter = query.delimiter ?? '';
    const maxKeys = Math.min(1000, query['max-keys'] === undefined ? 1000 : Number(query['max-keys']));
    const encode = query['encoding-type'] === 'url';
    const token = query['continuation-token'];
    const after =
      token !== undefined ? Buffer.from(token, 'base64url').toString('utf8') : (query['start-after'] ?? '');
    const keys = bucket.objects.ordered();
    let i = Math.max(bucket.objects.lowerBound(prefix), after === '' ? 0 : bucket.objects.upperBound(after));
    const contents: string[] = [];
    const prefixes: string[] = [];
    let last = '';
    let truncated = false;
    const name = (k: string) => xmlEscape(encode ? encodeURIComponent(k).replace(/%2F/g, '/') : k);
    for (; i < keys.length; i++) {
      const key = keys[i]!;
      if (!key.startsWith(prefix)) break;
      if (contents.length + prefixes.length >= maxKeys) {
        truncated = true;
        break;
      }
      const cut = delimiter === '' ? -1 : key.indexOf(delimiter, prefix.length);
      if (cut >= 0) {
        const common = key.slice(0, cut + delimiter.length);
        prefixes.push(`<CommonPrefixes><Prefix>${name(common)}</Prefix></CommonPrefixes>`);
        // Skip every key under this common prefix.
        while (i + 1 < keys.length && keys[i + 1]!.startsWith(common)) i++;
        last = keys[i]!;
        continue;
      }
      const object = bucket.objects.get(key)!;
      contents.push(
        `<Contents><Key>${name(key)}</Key><LastModified>${iso(object.lastModified)}</LastModified><ETag>${xmlEscape(object.etag)}</ETag><Size>${object.body.length}</Size><StorageClass>STANDARD</StorageClass></Contents>`,
      );
      last = key;
    }
    return xml(
      200,
      `<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>${xmlEscape(bucket.name)}</Name><Prefix>${name(prefix)}</Prefix>` +
        `<KeyCount>${contents.length + prefixes.length}</KeyCount><MaxKeys>${maxKeys}</MaxKeys>` +
        (delimiter ? `<Delimiter>${xmlEscape(delimiter)}</Delimiter>` : '') +
        `<IsTruncated>${truncated}</IsTruncated>` +
        (token !== undefined ? `<ContinuationToken>${xmlEscape(token)}</ContinuationToken>` : '') +
        (truncated
          ? `<NextContinuationToken>${Buffer.from(last).toString('base64url')}</NextContinuationToken>`
          : '') +
        (query['start-after'] !== undefined ? `<StartAfter>${name(query['start-after'])}</StartAfter>` : '') +
        (encode ? '<EncodingType>url</EncodingType>' : '') +
        contents.join('') +
        prefixes.join('') +
        '</ListBucketResult>',
    );
  }

  private deleteObjects(bucket: Bucket, body: string, headers: Record<string, string>): ServiceResponse {
    if (
      headers['content-md5'] === undefined &&
      !Object.keys(headers).some((h) => h.startsWith('x-amz-checksum-'))
    ) {
      throw new S3Error(
        'InvalidRequest',
        400,
        'Missing required header for this request: Content-MD5 OR x-amz-checksum-*',
      );
    }
    const keys = elements(body, 'Object').map((o) => text(o, 'Key') ?? '');
    if (keys.length === 0 || keys.length > 1000) {
      throw new S3Error(
        'MalformedXML',
        400,
        'The XML you provided was not well-formed or did not validate against our published schema',
      );
    }
    const quiet = text(body, 'Quiet') === 'true';
    for (const key of keys) this.remove(bucket, key);
    return xml(
      200,
      `<DeleteResult>${quiet ? '' : keys.map((k) => `<Deleted><Key>${xmlEscape(k)}</Key></Deleted>`).join('')}</DeleteResult>`,
    );
  }

  private complete(bucket: Bucket, key: string, uploadId: string, body: string): ServiceResponse {
    const upload = this.upload(bucket, uploadId, key);
    const listed = elements(body, 'Part').map((p) => ({
      number: Number(text(p, 'PartNumber')),
      etag: text(p, 'ETag') ?? '',
    }));
    if (listed.length === 0)
      throw new S3Error(
        'MalformedXML',
        400,
        'The XML you provided was not well-formed or did not validate against our published schema',
      );
    const parts: Buffer[] = [];
    for (const [i, entry] of listed.entries()) {
      if (i > 0 && entry.number <= listed[i - 1]!.number) {
        throw new S3Error(
          'InvalidPartOrder',
          400,
          'The list of parts was not in ascending order. The parts list must be specified in order by part number.',
          { UploadId: uploadId },
        );
      }
      const part = upload.parts.get(entry.number);
      if (!part || unquote(part.etag) !== unquote(entry.etag)) {
        throw new S3Error(
          'InvalidPart',
          400,
          "One or more of the specified parts could not be found. The part might not have been uploaded, or the specified entity tag might not have matched the part's entity tag.",
          { UploadId: uploadId, PartNumber: String(entry.number), ETag: entry.etag },
        );
      }
      if (i < listed.length - 1 && part.body.length < MIN_PART_BYTES) {
        throw new S3Error(
          'EntityTooSmall',
          400,
          'Your proposed upload is smaller than the minimum allowed object size.',
          {
            ProposedSize: String(part.body.length),
            MinSizeAllowed: String(MIN_PART_BYTES),
            PartNumber: String(entry.number),
            ETag: part.etag,
          },
        );
      }
      parts.push(part.body);
    }
    const whole = Buffer.concat(parts);
    const digests = Buffer.concat(
      listed.map((entry) => Buffer.from(unquote(upload.parts.get(entry.number)!.etag), 'hex')),
    );
    const etag = `"${md5(digests)}-${listed.length}"`;
    this.put(bucket, key, whole, upload.contentType, upload.metadata, etag);
    bucket.uploads.delete(uploadId);
    this.created(bucket, key, 'ObjectCreated:CompleteMultipartUpload');
    return xml(
      200,
      `<CompleteMultipartUploadResult><Location>https://${xmlEscape(bucket.name)}.s3.${this.region}.amazonaws.com/${xmlEscape(key)}</Location><Bucket>${xmlEscape(bucket.name)}</Bucket><Key>${xmlEscape(key)}</Key><ETag>${xmlEscape(etag)}</ETag></CompleteMultipartUploadResult>`,
    );
  }

  // --- Notifications ---------------------------------------------------------------------------

  private putNotifications(bucket: Bucket, body: string): ServiceResponse {
    bucket.notifications = elements(body, 'QueueConfiguration').map((block, i) => {
      const rules = elements(block, 'FilterRule').map((r) => ({
        name: (text(r, 'Name') ?? '').toLowerCase(),
        value: text(r, 'Value') ?? '',
      }));
      return {
        id: text(block, 'Id') ?? `notification-${i + 1}`,
        arn: text(block, 'Queue') ?? '',
        events: elements(block, 'Event'),
        prefix: rules.find((r) => r.name === 'prefix')?.value ?? '',
        suffix: rules.find((r) => r.name === 'suffix')?.value ?? '',
      };
    });
    // S3 checks each destination with a test event when the configuration is set.
    for (const arn of new Set(bucket.notifications.map((n) => n.arn))) {
      this.notify?.deliver(
        arn,
        JSON.stringify({
          Service: 'Amazon S3',
          Event: 's3:TestEvent',
          Time: iso(this.clock.now()),
          Bucket: bucket.name,
          RequestId: randomUUID(),
          HostId: randomUUID(),
        }),
      );
    }
    return { status: 200 };
  }

  private created(bucket: Bucket, key: string, eventName: string): void {
    for (const observer of this.observers) observer(bucket.name, key);
    if (!this.notify) return;
    const object = bucket.objects.get(key)!;
    for (const target of bucket.notifications) {
      const wanted = target.events.some((e) => e === 's3:ObjectCreated:*' || e === `s3:${eventName}`);
      if (!wanted || !key.startsWith(target.prefix) || !key.endsWith(target.suffix)) continue;
      this.sequencer += 1;
      const record = {
        eventVersion: '2.1',
        eventSource: 'aws:s3',
        awsRegion: this.region,
        eventTime: iso(this.clock.now()),
        eventName,
        userIdentity: { principalId: 'AWS:SIMULATED' },
        requestParameters: { sourceIPAddress: '127.0.0.1' },
        responseElements: { 'x-amz-request-id': randomUUID(), 'x-amz-id-2': randomUUID() },
        s3: {
          s3SchemaVersion: '1.0',
          configurationId: target.id,
          bucket: {
            name: bucket.name,
            ownerIdentity: { principalId: 'SIMULATED' },
            arn: `arn:aws:s3:::${bucket.name}`,
          },
          object: {
            key: eventKey(key),
            size: object.body.length,
            eTag: unquote(object.etag),
            sequencer: this.sequencer.toString(16).toUpperCase().padStart(18, '0'),
          },
        },
      };
      this.notify.deliver(target.arn, JSON.stringify({ Records: [record] }));
    }
  }
}

/** Which S3 operation a request is, from its method, key, query and headers. */
function operationOf(
  method: string,
  key: string,
  query: Record<string, string | undefined>,
  headers: Record<string, string>,
): string {
  const has = (name: string) => query[name] !== undefined;
  if (key === '') {
    if (method === 'PUT') return has('notification') ? 'PutBucketNotificationConfiguration' : 'CreateBucket';
    if (method === 'HEAD') return 'HeadBucket';
    if (method === 'DELETE') return 'DeleteBucket';
    if (method === 'POST' && has('delete')) return 'DeleteObjects';
    if (method === 'GET')
      return has('list-type')
        ? 'ListObjectsV2'
        : has('notification')
          ? 'GetBucketNotificationConfiguration'
          : 'ListObjects';
    return `${method} bucket`;
  }
  if (method === 'PUT') {
    if (has('uploadId')) return headers['x-amz-copy-source'] !== undefined ? 'UploadPartCopy' : 'UploadPart';
    return headers['x-amz-copy-source'] !== undefined ? 'CopyObject' : 'PutObject';
  }
  if (method === 'GET') return has('uploadId') ? 'ListParts' : 'GetObject';
  if (method === 'HEAD') return 'HeadObject';
  if (method === 'DELETE') return has('uploadId') ? 'AbortMultipartUpload' : 'DeleteObject';
  if (method === 'POST')
    return has('uploads')
      ? 'CreateMultipartUpload'
      : has('uploadId')
        ? 'CompleteMultipartUpload'
        : 'PostObject';
  return `${method} object`;
}

/**
 * A PUT's payload: its body, decoded when the SDK sent it `aws-chunked` (a stream of unknown
 * length with a trailing checksum), checked against its Content-MD5 and CRC32 when given.
 */
function payload(body: Buffer, headers: Record<string, string>): Buffer {
  let bytes = body;
  let trailer: Record<string, string> = {};
  if ((headers['content-encoding'] ?? '').includes('aws-chunked')) ({ bytes, trailer } = unchunk(body));
  const md5Header = headers['content-md5'];
  if (md5Header !== undefined && createHash('md5').update(bytes).digest('base64') !== md5Header) {
    throw new S3Error('BadDigest', 400, 'The Content-MD5 you specified did not match what we received.');
  }
  const crc = headers['x-amz-checksum-crc32'] ?? trailer['x-amz-checksum-crc32'];
  if (crc !== undefined) {
    const computed = Buffer.alloc(4);
    computed.writeUInt32BE(crc32(bytes));
    if (computed.toString('base64') !== crc) {
      throw new S3Error('BadDigest', 400, 'The CRC32 you specified did not match the calculated checksum.');
    }
  }
  return bytes;
}

function unchunk(body: Buffer): { bytes: Buffer; trailer: Record<string, string> } {
  const chunks: Buffer[] = [];
  const trailer: Record<string, string> = {};
  let at = 0;
  for (;;) {
    const eol = body.indexOf('\r\n', at);
    if (eol < 0) break;
    const size = Number.parseInt(body.subarray(at, eol).toString('latin1').split(';')[0]!, 16);
    at = eol + 2;
    if (!(size > 0)) {
      for (const line of body.subarray(at).toString('latin1').split('\r\n')) {
        const colon = line.indexOf(':');
        if (colon > 0) trailer[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
      }
      break;
    }
    chunks.push(body.subarray(at, at + size));
    at += size + 2;
  }
  return { bytes: Buffer.concat(chunks), trailer };
}

function echoChecksum(headers: Record<string, string>): Record<string, string> {
  const crc = headers['x-amz-checksum-crc32'];
  return crc === undefined ? {} : { 'x-amz-checksum-crc32': crc };
}

function metadataOf(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).filter(([name]) => name.startsWith('x-amz-meta-')));
}

function objectHeaders(object: StoredObject, length: number): Record<string, string> {
  return {
    'content-type': object.contentType,
    'content-length': String(length),
    etag: object.etag,
    'last-modified': new Date(object.lastModified).toUTCString(),
    'accept-ranges': 'bytes',
    ...object.metadata,
  };
}

function errorResponse(err: S3Error): ServiceResponse {
  const extra = Object.entries(err.extra)
    .map(([name, value]) => `<${name}>${xmlEscape(value)}</${name}>`)
    .join('');
  return xml(
    err.status,
    `<Error><Code>${err.code}</Code><Message>${xmlEscape(err.message)}</Message>${extra}<RequestId>${randomUUID()}</RequestId><HostId>${randomUUID()}</HostId></Error>`,
  );
}

function xml(status: number, body: string): ServiceResponse {
  return {
    status,
    headers: { 'content-type': 'application/xml' },
    body: Buffer.from(`<?xml version="1.0" encoding="UTF-8"?>\n${body}`),
  };
}

function md5(bytes: Buffer): string {
  return createHash('md5').update(bytes).digest('hex');
}

function unquote(etag: string): string {
  return etag.replace(/^"|"$/g, '').replace(/^&quot;|&quot;$/g, '');
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

function decodePath(path: string): string {
  return decodeURIComponent(path);
}

/** A key as S3 writes it in an event: URL-encoded, `+` for a space, `/` kept. */
function eventKey(key: string): string {
  return encodeURIComponent(key).replace(/%2F/g, '/').replace(/%20/g, '+');
}

function xmlEscape(value: string): string {
  return value
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&apos;');
}

function xmlUnescape(value: string): string {
  return value
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&apos;/g, "'")
    .replace(/&#(\d+);/g, (_, n: string) => String.fromCodePoint(Number(n)))
    .replace(/&#x([0-9a-fA-F]+);/g, (_, n: string) => String.fromCodePoint(Number.parseInt(n, 16)))
    .replace(/&amp;/g, '&');
}

/** The inner XML of every `<name>` element (the SDK's request bodies are plain, well-formed XML). */
function elements(source: string, name: string): string[] {
  const out: string[] = [];
  const pattern = new RegExp(`<${name}(?:\\s[^>]*)?>([\\s\\S]*?)</${name}>`, 'g');
  for (const match of source.matchAll(pattern)) out.push(match[1]!);
  return out.map((inner) => (inner.includes('<') ? inner : xmlUnescape(inner)));
}

function text(source: string, name: string): string | undefined {
  const match = new RegExp(`<${name}(?:\\s[^>]*)?>([\\s\\S]*?)</${name}>`).exec(source);
  return match ? xmlUnescape(match[1]!) : undefined;
}
