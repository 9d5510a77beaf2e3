/**
 * What the three stand-ins share: the SDK's request-handler interface over a simulated service
 * (each client's own connection pool, as the SDK's Node handler keeps one), reading a request's
 * body in any form the SDK sends it, and the service latency each request waits.
 */
import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import type { HttpHandler, HttpHandlerOptions, HttpRequest, HttpResponse } from '@smithy/core/protocols';

/** Simulated time, as the stand-ins need it. */
export interface Clock {
  now(): number;
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/** A service's answer to one request. */
export interface ServiceResponse {
  status: number;
  headers?: Record<string, string>;
  /** A Readable only for streamed payloads (S3 GetObject). */
  body?: Uint8Array | string | Readable;
}

/** A simulated AWS service: one request in, one response out, after its simulated latency. */
export interface SimService {
  serve(request: SimRequest): Promise<ServiceResponse>;
}

/** A request as a stand-in reads it: headers with lowercase names, the body read whole. */
export interface SimRequest {
  method: string;
  hostname: string;
  path: string;
  query: Record<string, string | undefined>;
  headers: Record<string, string>;
  body: Buffer;
  signal?: AbortSignal;
}

export interface LatencyOptions {
  /** Every request's base latency, ms. */
  baseMs?: number;
  /** Up to this much more, uniformly drawn, ms. */
  jitterMs?: number;
}

/** Draws latencies from a seeded generator, so a run is reproducible. */
export class Latency {
  private state: number;

  constructor(
    private readonly baseMs: number,
    private readonly jitterMs: number,
    seed: number,
  ) {
    this.state = seed >>> 0;
  }

  /** A latency, plus `extraMs` (transfer time, a transaction's second phase). */
  draw(extraMs = 0): number {
    return this.baseMs + extraMs + (this.jitterMs > 0 ? this.random() * this.jitterMs : 0);
  }

  /** Uniform in [0, 1), from the same seeded stream. */
  random(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
}

export interface HandlerOptions {
  /** Requests one client has in flight at once; more wait for a connection. Default 50 (the SDK's Node handler's `maxSockets`). */
  maxSockets?: number;
}

/** How long requests waited for a connection of their client's pool. */
export interface PoolStats {
  requests: number;
  queued: number;
  queuedMs: number;
  maxInFlight: number;
}

/**
 * The SDK's `requestHandler` over a simulated service: pass it as `requestHandler` when building
 * a client, and the SDK's serialisation, signing, retries and error parsing all run as usual.
 * Each handler is one client's connection pool.
 */
export class SimHttpHandler implements HttpHandler {
  private inFlight = 0;
  private readonly waiting: (() => void)[] = [];
  private readonly maxSockets: number;
  readonly stats: PoolStats = { requests: 0, queued: 0, queuedMs: 0, maxInFlight: 0 };

  constructor(
    private readonly service: SimService,
    private readonly clock: Clock,
    { maxSockets = 50 }: HandlerOptions = {},
  ) {
    this.maxSockets = maxSockets;
  }

  async handle(request: HttpRequest, options?: HttpHandlerOptions): Promise<{ response: HttpResponse }> {
    const signal = options?.abortSignal as AbortSignal | undefined;
    if (signal?.aborted) throw abortError();
    this.stats.requests += 1;
    if (this.inFlight >= this.maxSockets) {
      const since = this.clock.now();
      this.stats.queued += 1;
      await new Promise<void>((resolve) => this.waiting.push(resolve));
      this.stats.queuedMs += this.clock.now() - since;
    } else {
      this.inFlight += 1;
    }
    this.stats.maxInFlight = Math.max(this.stats.maxInFlight, this.inFlight);
    try {
      const simRequest: SimRequest = {
        method: request.method,
        hostname: request.hostname,
        path: request.path,
        query: flatQuery(request.query),
        headers: lowerCase(request.headers),
        body: await readBody(request.body),
        ...(signal ? { signal } : {}),
      };
      const answer = await this.service.serve(simRequest);
      if (signal?.aborted) throw abortError();
      return { response: toResponse(answer) };
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.inFlight -= 1;
    }
  }

  updateHttpClientConfig(): void {}

  httpHandlerConfigs(): Record<string, never> {
    return {};
  }

  destroy(): void {}
}

function abortError(): Error {
  const error = new Error('Request aborted');
  error.name = 'AbortError';
  return error;
}

function toResponse({ status, headers = {}, body }: ServiceResponse): HttpResponse {
  const bytes = typeof body === 'string' ? Buffer.from(body) : body;
  const out: Record<string, string> = { 'x-amzn-requestid': randomUUID(), ...headers };
  if (bytes instanceof Uint8Array && out['content-length'] === undefined)
    out['content-length'] = String(bytes.byteLength);
  return { statusCode: status, headers: out, body: bytes ?? new Uint8Array() } as HttpResponse;
}

function lowerCase(headers: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) out[name.toLowerCase()] = value;
  return out;
}

function flatQuery(query: HttpRequest['query']): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {};
  for (const [name, value] of Object.entries(query ?? {})) {
    out[name] = Array.isArray(value) ? value[0] : value === null ? '' : value;
  }
  return out;
}

/** A request body as bytes, whatever the SDK sent: a string, bytes, or a stream. */
export async function readBody(body: unknown): Promise<Buffer> {
  if (body === undefined || body === null) return Buffer.alloc(0);
  if (typeof body === 'string') return Buffer.from(body);
  if (body instanceof Uint8Array) return Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  if (body instanceof ArrayBuffer) return Buffer.from(body);
  if (body instanceof Readable || (typeof body === 'object' && Symbol.asyncIterator in body)) {
    const chunks: Buffer[] = [];
    for await (const chunk of body as AsyncIterable<Uint8Array | string>) {
      chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : Buffer.from(chunk));
    }
    return Buffer.concat(chunks);
  }
  throw new TypeError(`unreadable request body: ${Object.prototype.toString.call(body)}`);
}

/** A JSON response of the JSON protocols (DynamoDB 1.0, SQS 1.0, Secrets Manager 1.1). */
export function jsonResponse(
  status: number,
  payload: unknown,
  version = '1.0',
  headers: Record<string, string> = {},
): ServiceResponse {
  return {
    status,
    headers: { 'content-type': `application/x-amz-json-${version}`, ...headers },
    body: Buffer.from(JSON.stringify(payload)),
  };
}
