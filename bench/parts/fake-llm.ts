/**
 * The bench's OpenAI-compatible server, run in a process of its own so that serving the
 * requests does not share the measured process's CPU: every chat completion is answered after
 * a fixed latency. With `--rpm N` it enforces a requests-per-minute limit the way vendors
 * meter it, in slices: at most N/60 requests in any sliding second; over it → 429 with
 * `retry-after` (seconds) saying when the window has room again. Every answer (and every 429)
 * then carries OpenAI's rate-limit headers, as OpenAI reports them: `x-ratelimit-limit-requests`
 * (the minute's limit), `x-ratelimit-remaining-requests` and `x-ratelimit-reset-requests` of a
 * bucket that size refilled continuously at the limit's pace (`20ms` after one request at 3,000
 * RPM), taken when the request is accepted. `--no-headers` leaves them out.
 *
 *   tsx bench/parts/fake-llm.ts --latency-ms 200 [--rpm 3000] [--no-headers]
 *
 * Prints `{"port":…}` on its first stdout line; `GET /stats` returns
 * `{ requests, answered, tooMany, firstAt, lastAt }` (times in ms since the epoch), and
 * `GET /stats?reset` returns them and starts counting again (one fake, several measured runs).
 * `GET /first-request` returns the body of the first chat completion it was sent (the bench's
 * bare-SDK script sends the same requests).
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    'latency-ms': { type: 'string', default: '200' },
    rpm: { type: 'string' },
    'no-headers': { type: 'boolean', default: false },
  },
});
const latencyMs = Number(values['latency-ms']);
const rpm = values.rpm === undefined ? undefined : Number(values.rpm);

/** A GEC judge's answer the parsers accept; usage so the run has tokens to cost. */
const BODY = JSON.stringify({
  id: 'chatcmpl-bench',
  object: 'chat.completion',
  created: 0,
  model: 'bench',
  choices: [
    {
      index: 0,
      message: { role: 'assistant', content: '{"label":"TP","reason":"the edit is correct"}', refusal: null },
      finish_reason: 'stop',
      logprobs: null,
    },
  ],
  usage: { prompt_tokens: 400, completion_tokens: 12, total_tokens: 412 },
});

let stats = { requests: 0, answered: 0, tooMany: 0, firstAt: 0, lastAt: 0 };
let firstRequest: string | undefined;
/** Accepted request times within the last second, oldest first. */
const window: number[] = [];
const perSecond = rpm === undefined ? undefined : Math.max(1, Math.floor(rpm / 60));
const sendHeaders = rpm !== undefined && !values['no-headers'];
/** The OpenAI-style bucket the headers describe: requests given out and not yet refilled. */
let used = 0;
let usedAt = 0;

/** Go-style duration, as OpenAI writes resets: `20ms`, `1s`, `1m30.5s`. */
function duration(ms: number): string {
  if (ms < 1000) return `${Math.ceil(ms)}ms`;
  const minutes = Math.floor(ms / 60_000);
  const seconds = +((ms - minutes * 60_000) / 1000).toFixed(3);
  return minutes > 0 ? `${minutes}m${seconds}s` : `${seconds}s`;
}

/** OpenAI's request headers as of `now`, after `taking` more requests. */
function limitHeaders(now: number, taking: number): Record<string, string> {
  if (!sendHeaders || rpm === undefined) return {};
  used = Math.max(0, used - ((now - usedAt) * rpm) / 60_000) + taking;
  usedAt = now;
  return {
    'x-ratelimit-limit-requests': String(rpm),
    'x-ratelimit-remaining-requests': String(Math.max(0, Math.floor(rpm - used))),
    'x-ratelimit-reset-requests': duration((used * 60_000) / rpm),
  };
}

const server = createServer((req, res) => {
  if (req.method === 'GET' && (req.url === '/stats' || req.url === '/stats?reset')) {
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(stats));
    if (req.url === '/stats?reset') stats = { requests: 0, answered: 0, tooMany: 0, firstAt: 0, lastAt: 0 };
    return;
  }
  if (req.method === 'GET' && req.url === '/first-request') {
    res.writeHead(firstRequest ? 200 : 404, { 'content-type': 'application/json' }).end(firstRequest ?? '{}');
    return;
  }
  let body = '';
  if (firstRequest === undefined) req.on('data', (chunk) => (body += chunk));
  else req.resume();
  req.on('end', () => {
    if (firstRequest === undefined && body) firstRequest = body;
    const now = Date.now();
    stats.requests += 1;
    if (stats.firstAt === 0) stats.firstAt = now;
    if (perSecond !== undefined) {
      while (window.length > 0 && window[0]! <= now - 1000) window.shift();
      if (window.length >= perSecond) {
        stats.tooMany += 1;
        const retryAfter = Math.max(1, Math.ceil((window[0]! + 1000 - now) / 1000));
        res
          .writeHead(429, {
            'content-type': 'application/json',
            'retry-after': String(retryAfter),
            ...limitHeaders(now, 0),
          })
          .end(
            JSON.stringify({
              error: { message: 'rate limit reached (requests per minute)', type: 'requests' },
            }),
          );
        return;
      }
      window.push(now);
    }
    const headers = limitHeaders(now, 1);
    setTimeout(() => {
      stats.answered += 1;
      stats.lastAt = Date.now();
      res.writeHead(200, { 'content-type': 'application/json', ...headers }).end(BODY);
    }, latencyMs);
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ port: (server.address() as AddressInfo).port })}\n`);
});
