/**
 * The bench's OpenAI-compatible server, run in a process of its own so that serving the
 * requests does not share the measured process's CPU: every chat completion is answered after
 * a fixed latency. With `--rpm N` it enforces a requests-per-minute limit the way vendors
 * meter it, in slices: at most N/60 requests in any sliding second; over it → 429 with
 * `retry-after` (seconds) saying when the window has room again.
 *
 *   tsx bench/parts/fake-llm.ts --latency-ms 200 [--rpm 3000]
 *
 * Prints `{"port":…}` on its first stdout line; `GET /stats` returns
 * `{ requests, answered, tooMany, firstAt, lastAt }` (times in ms since the epoch).
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: { 'latency-ms': { type: 'string', default: '200' }, rpm: { type: 'string' } },
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

const stats = { requests: 0, answered: 0, tooMany: 0, firstAt: 0, lastAt: 0 };
/** Accepted request times within the last second, oldest first. */
const window: number[] = [];
const perSecond = rpm === undefined ? undefined : Math.max(1, Math.floor(rpm / 60));

const server = createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/stats') {
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(stats));
    return;
  }
  req.resume();
  req.on('end', () => {
    const now = Date.now();
    stats.requests += 1;
    if (stats.firstAt === 0) stats.firstAt = now;
    if (perSecond !== undefined) {
      while (window.length > 0 && window[0]! <= now - 1000) window.shift();
      if (window.length >= perSecond) {
        stats.tooMany += 1;
        const retryAfter = Math.max(1, Math.ceil((window[0]! + 1000 - now) / 1000));
        res.writeHead(429, { 'content-type': 'application/json', 'retry-after': String(retryAfter) }).end(
          JSON.stringify({
            error: { message: 'rate limit reached (requests per minute)', type: 'requests' },
          }),
        );
        return;
      }
      window.push(now);
    }
    setTimeout(() => {
      stats.answered += 1;
      stats.lastAt = Date.now();
      res.writeHead(200, { 'content-type': 'application/json' }).end(BODY);
    }, latencyMs);
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ port: (server.address() as AddressInfo).port })}\n`);
});
