/**
 * The fault-injection server: a loopback OpenAI-compatible `/v1/chat/completions` that answers
 * by a seeded fault schedule, and a ledger of what it billed.
 *
 * Billing. A vendor bills an answer once it has produced it, whether or not the client reads
 * it. The ledger records every answer sent in full with its usage (`sent`), and separately
 * whether the client's process read it (`delivery`): on loopback, Linux answers the close of a
 * socket that still holds unread bytes with a reset (RST) instead of a FIN, so an answer is
 * `delivered` once the client sends its next request on the same connection or closes the
 * connection cleanly, and `unread` when the connection is reset with the answer still waiting
 * (the client was killed, or gave up on it, before reading it). Idle connections are never
 * closed from this side (that would hide the client's reset); the client closes them.
 *
 * Each answer's text carries a token of the request it answers (`chaos-<12 hex>` of the body's
 * digest), and a verdict also its own id (`chaos-answer-<serial>`), so a scenario can tell from
 * the client's stored files (its LLM cache, its results) which answers reached it. Answers the
 * client repairs (off-format, cut short, refused) carry only the request's token: a repair
 * request quotes the answer, and must not differ between two answers to the same request.
 */
import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { costOf, EMBEDDED_PRICES } from '../../shared/lib/providers/pricing.js';

/** The schedule, as shares of requests (drawn per request body and attempt). */
export const FAULTS = [
  ['rate_limit', 0.04],
  ['server_500', 0.03],
  ['server_503', 0.03],
  ['reset', 0.02],
  ['hang', 0.005],
  ['malformed', 0.02],
  ['off_format', 0.02],
  ['length', 0.02],
  ['refusal', 0.015],
] as const;
export type Fault = (typeof FAULTS)[number][0] | 'ok';

/** What the server billed for one answer. */
export interface BilledAnswer {
  /** Order in which answers were sent, from 1. */
  serial: number;
  /** SHA-256 (hex) of the request body. */
  digest: string;
  usd: number;
  /** What the schedule drew for it (`ok` or an answer fault: off_format, length, refusal). */
  fault: Fault;
  /** From the request's arrival to the answer handed to the operating system, ms. */
  answerMs?: number;
  /** Which client process asked (the scenario's phase: 0 before the first kill, 1 after it…). */
  phase: number;
  /** The whole answer was handed to the operating system (what a vendor bills). */
  sent: boolean;
  /** Whether the client's process read it: see the file comment. `pending` until known. */
  delivery: 'pending' | 'delivered' | 'unread';
}

export interface Ledger {
  requests: number;
  faults: Record<string, number>;
  /** Every answer sent with usage, in order. */
  answers: BilledAnswer[];
}

/** The token an answer to the request with this body digest carries in its text. */
export const answerToken = (digest: string) => `chaos-${digest.slice(0, 12)}`;
/** The id a verdict (an `ok` answer) carries in its text. */
export const answerId = (serial: number) => `chaos-answer-${serial}`;
/** Request tokens and answer ids, in stored text. */
export const ANSWER_TOKEN = /chaos-(?:[0-9a-f]{12}|answer-\d+)/g;

/** What one answer costs: gpt-4o-mini's embedded price for its usage. */
const priceOf = (input: number, output: number) =>
  costOf(EMBEDDED_PRICES, 'openai:gpt-4o-mini', { input, output, cached: 0 }).usd;

export interface FaultServer {
  server: Server;
  url: string;
  ledger: Ledger;
  /** Later requests are counted in this phase. */
  setPhase(phase: number): void;
  /** Resolves once no client connection is open (or after `timeoutMs`); true when none is. */
  connectionsClosed(timeoutMs: number): Promise<boolean>;
  close(): Promise<void>;
}

export interface FaultServerOptions {
  seed: number;
  /** Requests beyond this get a 400 (a runaway client stops). */
  maxRequests: number;
  /** The server closes itself after this long whatever happens. */
  maxLifetimeMs: number;
  /** Answers take `minLatencyMs` plus a drawn share of `spreadMs`. */
  minLatencyMs?: number;
  spreadMs?: number;
  /** Replace the schedule (tests). */
  faultOf?: (digest: string, attempt: number) => Fault;
}

export function startFaultServer(options: FaultServerOptions): Promise<FaultServer> {
  const { seed, minLatencyMs = 50, spreadMs = 100 } = options;
  /** A seeded uniform draw in [0, 1): the schedule is the same in every scenario. */
  const draw = (...parts: (string | number)[]) =>
    createHash('sha256')
      .update(`${seed}/${parts.join('/')}`)
      .digest()
      .readUInt32BE(0) /
    2 ** 32;
  const faultOf =
    options.faultOf ??
    ((digest: string, attempt: number): Fault => {
      const u = draw('fault', digest, attempt);
      let edge = 0;
      for (const [fault, share] of FAULTS) {
        edge += share;
        if (u < edge) return fault;
      }
      return 'ok';
    });

  const ledger: Ledger = { requests: 0, faults: {}, answers: [] };
  let phase = 0;
  let closing = false;
  const attempts = new Map<string, number>();
  const hung = new Set<ServerResponse>();
  const sockets = new Set<Socket>();
  /** The answer last written on a connection, until the client shows it read it. */
  const awaiting = new WeakMap<Socket, BilledAnswer>();
  const reset = new WeakSet<Socket>();
  const settle = (socket: Socket, delivery: 'delivered' | 'unread') => {
    const answer = awaiting.get(socket);
    if (answer?.delivery === 'pending') answer.delivery = delivery;
    awaiting.delete(socket);
  };

  const server = createServer((req, res) => void handle(req, res));
  // Never close an idle connection from this side: the client's FIN or RST is the signal.
  server.keepAliveTimeout = 0;
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('error', () => reset.add(socket));
    socket.on('close', (hadError) => {
      sockets.delete(socket);
      // A clean close by a live client means it read everything; a reset means it did not.
      // Connections this side tears down at the end say nothing either way.
      if (hadError || reset.has(socket)) settle(socket, 'unread');
      else if (!closing) settle(socket, 'delivered');
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    // A client sends its next request on a connection only once it has read the last answer.
    settle(req.socket, 'delivered');
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks).toString('utf8');
    if (!req.url?.endsWith('/chat/completions')) {
      res.writeHead(404).end();
      return;
    }
    ledger.requests += 1;
    if (ledger.requests > options.maxRequests) {
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: 'chaos server: request budget spent' } }));
      return;
    }
    const digest = createHash('sha256').update(raw).digest('hex');
    const attempt = (attempts.get(digest) ?? 0) + 1;
    attempts.set(digest, attempt);
    const fault = faultOf(digest, attempt);
    ledger.faults[fault] = (ledger.faults[fault] ?? 0) + 1;
    const body = JSON.parse(raw) as { model: string; messages: { content: string }[] };
    const askedIn = phase;
    const arrived = performance.now();
    await new Promise((r) =>
      setTimeout(r, minLatencyMs + Math.floor(spreadMs * draw('latency', digest, attempt))),
    );
    const error = (status: number, headers: Record<string, string> = {}) => {
      res.writeHead(status, { 'content-type': 'application/json', ...headers });
      res.end(JSON.stringify({ error: { message: `chaos ${status}`, type: 'chaos' } }));
    };
    switch (fault) {
      case 'rate_limit':
        return error(429, { 'retry-after': '1' });
      case 'server_500':
        return error(500);
      case 'server_503':
        return error(503);
      case 'reset':
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('{"id":"chatcmpl-chaos","choices":[{"index":0,');
        setTimeout(() => res.destroy(), 5);
        return;
      case 'hang':
        hung.add(res);
        res.on('close', () => hung.delete(res));
        return;
      case 'malformed':
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          '{"id":"chatcmpl-chaos","choices":[{"index":0,"message":{"role":"assistant","content":"{\\"lab',
        );
        return;
    }
    const token = answerToken(digest);
    const serial = ledger.answers.length + 1;
    const promptChars = body.messages.reduce((n, m) => n + String(m.content ?? '').length, 0);
    const label = ['TP', 'FP1', 'FP2', 'FP3'][Math.floor(4 * draw('label', digest))]!;
    const text =
      fault === 'off_format'
        ? `The edit looks fine to me (${token}).`
        : fault === 'length'
          ? `{"reason":"${token}","label":"T`
          : fault === 'refusal'
            ? null
            : JSON.stringify({ label, reason: `chaos model ${token} ${answerId(serial)}` });
    const usage = { prompt_tokens: Math.ceil(promptChars / 4), completion_tokens: 12 };
    const answer = {
      id: `chatcmpl-${answerId(serial)}`,
      object: 'chat.completion',
      created: 0,
      model: body.model,
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: text,
            ...(fault === 'refusal' ? { refusal: `I cannot help with that (${token}).` } : {}),
          },
          finish_reason: fault === 'length' ? 'length' : 'stop',
        },
      ],
      usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens },
    };
    const billed: BilledAnswer = {
      serial,
      digest,
      usd: priceOf(usage.prompt_tokens, usage.completion_tokens),
      fault,
      phase: askedIn,
      sent: false,
      delivery: 'pending',
    };
    ledger.answers.push(billed);
    const socket = req.socket;
    // The client went away while the answer was being made: it is billed and never read.
    if (socket.destroyed || reset.has(socket)) billed.delivery = 'unread';
    else awaiting.set(socket, billed);
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(answer), () => {
      billed.sent = true;
      billed.answerMs = Math.round(performance.now() - arrived);
    });
  }

  return new Promise((resolveServer) => {
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      const lifetime = setTimeout(() => server.close(), options.maxLifetimeMs);
      lifetime.unref();
      resolveServer({
        server,
        url: `http://127.0.0.1:${port}`,
        ledger,
        setPhase: (next) => {
          phase = next;
        },
        connectionsClosed: async (timeoutMs) => {
          const deadline = performance.now() + timeoutMs;
          while (sockets.size > 0 && performance.now() < deadline)
            await new Promise((r) => setTimeout(r, 20));
          return sockets.size === 0;
        },
        close: () =>
          new Promise<void>((done) => {
            closing = true;
            clearTimeout(lifetime);
            for (const res of hung) res.destroy();
            server.closeAllConnections();
            server.close(() => done());
          }),
      });
    });
  });
}
