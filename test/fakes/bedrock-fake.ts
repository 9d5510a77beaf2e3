/**
 * A local server that speaks Amazon Bedrock Runtime's Converse wire format, so tests run the
 * official `@aws-sdk/client-bedrock-runtime` for real, offline. It is HTTP/2 without TLS (the
 * SDK's Bedrock client speaks HTTP/2 only), and answers `POST /model/{modelId}/converse` with
 * the JSON body the API reference documents; errors carry the exception's name in the
 * `x-amzn-errortype` header and `{"message"}` as the body, as Bedrock sends them.
 *
 * ```ts
 * const fake = await startBedrockFake(({ promptText }) => ({ text: '{"label":"TP"}' }));
 * const provider = createProvider('bedrock:amazon.nova-lite-v1:0', { env: fake.env, prices });
 * // fake.env = { AWS_ENDPOINT_URL_BEDROCK_RUNTIME: fake.url, AWS_REGION, AWS_ACCESS_KEY_ID, … }
 * await fake.close();
 * ```
 */
import {
  createServer,
  type Http2ServerRequest,
  type Http2ServerResponse,
  type ServerHttp2Session,
} from 'node:http2';
import type { AddressInfo } from 'node:net';
import type { WireJson } from './vendor-fake.js';

/** What a handler sees of one Converse request. */
export interface BedrockCall {
  /** The model id from the path, decoded (`us.amazon.nova-lite-v1:0`). */
  model: string;
  /** The JSON body exactly as the SDK sent it. */
  body: WireJson;
  /** Every user turn's text, joined with blank lines. */
  promptText: string;
  systemText: string;
  /** The forced tool's name when the request asked for structured output. */
  tool?: string;
  /** 0-based index among all requests received. */
  index: number;
}

export interface BedrockTextReply {
  text: string;
  /** Default: `tool_use` for a structured request answered with JSON, else `end_turn`. */
  stopReason?: string;
  usage?: { input?: number; output?: number; cacheRead?: number; cacheWrite?: number };
}
/** A Bedrock exception: its name (`ThrottlingException`), HTTP status and message. */
export interface BedrockErrorReply {
  error: string;
  status: number;
  message?: string;
}
/** Never answer (until the client gives up or the fake closes). */
export interface BedrockHangReply {
  hang: true;
}
export type BedrockReply = BedrockTextReply | BedrockErrorReply | BedrockHangReply;
export type BedrockHandler = (call: BedrockCall) => BedrockReply | undefined;

export interface BedrockRecorded {
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: WireJson;
  model: string;
}

export interface BedrockFake {
  /** `http://127.0.0.1:PORT` */
  url: string;
  requests: BedrockRecorded[];
  /** Points the SDK here, with a region and fake static credentials. */
  env: Record<string, string>;
  setHandler(handler?: BedrockHandler): void;
  reset(): void;
  close(): Promise<void>;
}

export const DEFAULT_BEDROCK_TEXT = '{"label":"TP","reason":"fake"}';

/** The statuses Bedrock Runtime sends with each exception. */
export const BEDROCK_ERROR_STATUS: Readonly<Record<string, number>> = {
  AccessDeniedException: 403,
  ValidationException: 400,
  ResourceNotFoundException: 404,
  ThrottlingException: 429,
  ModelNotReadyException: 429,
  ServiceUnavailableException: 503,
  InternalServerException: 500,
  ModelTimeoutException: 408,
  ModelErrorException: 424,
};

/** A handler answering the given replies in order, one per request, then the default answer. */
export function bedrockSequence(...replies: BedrockReply[]): BedrockHandler {
  let next = 0;
  return () => replies[next++];
}

/** A Bedrock exception reply with its real status. */
export function bedrockError(name: string, message = `fake ${name}`): BedrockErrorReply {
  return { error: name, status: BEDROCK_ERROR_STATUS[name] ?? 400, message };
}

export async function startBedrockFake(handler?: BedrockHandler): Promise<BedrockFake> {
  let current = handler;
  const requests: BedrockRecorded[] = [];
  let count = 0;

  const server = createServer((req, res) => {
    void handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) send(res, 500, { message: `bedrock fake crashed: ${String(error)}` });
    });
  });
  const sessions = new Set<ServerHttp2Session>();
  server.on('session', (session) => {
    sessions.add(session);
    session.once('close', () => sessions.delete(session));
  });

  async function handle(req: Http2ServerRequest, res: Http2ServerResponse): Promise<void> {
    const raw = await readBody(req);
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    const match = /^\/model\/([^/]+)\/converse$/.exec(path);
    if (req.method !== 'POST' || !match?.[1]) {
      sendError(res, 'UnknownOperationException', 404, `bedrock fake: no route for ${req.method} ${path}`);
      return;
    }
    const model = decodeURIComponent(match[1]);
    const body = (raw ? JSON.parse(raw) : {}) as WireJson;
    requests.push({ path, headers: { ...req.headers }, body, model });
    const call: BedrockCall = {
      model,
      body,
      promptText: turnsText(body, 'user'),
      systemText: blocksText(body?.system),
      tool: body?.toolConfig?.toolChoice?.tool?.name,
      index: count++,
    };
    const reply = current?.(call) ?? { text: DEFAULT_BEDROCK_TEXT };
    if ('hang' in reply) return;
    if ('error' in reply) {
      sendError(res, reply.error, reply.status, reply.message ?? `fake ${reply.error}`);
      return;
    }
    send(res, 200, converseResponse(call, reply));
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const url = `http://127.0.0.1:${port}`;
  return {
    url,
    requests,
    env: {
      AWS_ENDPOINT_URL_BEDROCK_RUNTIME: url,
      AWS_REGION: 'us-east-1',
      AWS_ACCESS_KEY_ID: 'test',
      AWS_SECRET_ACCESS_KEY: 'test',
      AWS_SESSION_TOKEN: 'test',
    },
    setHandler(next) {
      current = next;
    },
    reset() {
      requests.length = 0;
    },
    close() {
      return new Promise((resolve) => {
        server.close(() => resolve());
        // HTTP/2 sessions the SDK keeps open would hold the server: end them.
        for (const session of sessions) session.destroy();
      });
    },
  };
}

function converseResponse(call: BedrockCall, reply: BedrockTextReply): unknown {
  let toolInput: unknown;
  if (call.tool !== undefined) {
    try {
      toolInput = JSON.parse(reply.text);
    } catch {
      toolInput = undefined;
    }
  }
  const content =
    toolInput === undefined
      ? [{ text: reply.text }]
      : [{ toolUse: { toolUseId: `tooluse_fake${call.index}`, name: call.tool, input: toolInput } }];
  const input =
    reply.usage?.input ?? Math.max(1, Math.ceil(`${call.systemText}${call.promptText}`.length / 4));
  const output = reply.usage?.output ?? Math.max(1, Math.ceil(reply.text.length / 4));
  const cacheRead = reply.usage?.cacheRead ?? 0;
  const cacheWrite = reply.usage?.cacheWrite ?? 0;
  return {
    output: { message: { role: 'assistant', content } },
    stopReason: reply.stopReason ?? (toolInput === undefined ? 'end_turn' : 'tool_use'),
    usage: {
      // Bedrock's inputTokens excludes cache reads and writes; totalTokens counts them all.
      inputTokens: input,
      outputTokens: output,
      totalTokens: input + output + cacheRead + cacheWrite,
      ...(cacheRead > 0 ? { cacheReadInputTokens: cacheRead } : {}),
      ...(cacheWrite > 0 ? { cacheWriteInputTokens: cacheWrite } : {}),
    },
    metrics: { latencyMs: 42 },
  };
}

function blocksText(blocks: unknown): string {
  if (!Array.isArray(blocks)) return '';
  return blocks
    .map((block: WireJson) => (typeof block?.text === 'string' ? block.text : ''))
    .filter(Boolean)
    .join('\n');
}

function turnsText(body: WireJson, role: string): string {
  const messages: WireJson[] = Array.isArray(body?.messages) ? body.messages : [];
  return messages
    .filter((m) => m.role === role)
    .map((m) => blocksText(m.content))
    .join('\n\n');
}

function readBody(req: Http2ServerRequest): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function send(res: Http2ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

function sendError(res: Http2ServerResponse, name: string, status: number, message: string): void {
  send(
    res,
    status,
    { message },
    {
      'x-amzn-errortype': `${name}:http://internal.amazon.com/coral/com.amazon.bedrock/`,
      'x-amzn-requestid': 'fake-request-id',
    },
  );
}
