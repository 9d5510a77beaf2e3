/**
 * The fault-injection bench's own instruments: the server's billing-on-delivery signal (a
 * client killed before reading an answer resets the connection; one that read it closes it
 * cleanly) and the split of requests billed twice.
 */
import { spawn } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { splitBilling } from '../../../bench/chaos/ledger.js';
import {
  answerId,
  answerToken,
  type BilledAnswer,
  type FaultServer,
  startFaultServer,
} from '../../../bench/chaos/server.js';

/**
 * A client process that sends one chat request over a raw socket. `read`: it reads the whole
 * answer and says `read` on stdout. Otherwise it never reads (the answer stays in the kernel's
 * receive buffer). Either way it then waits to be killed.
 */
function client(url: string, read: boolean) {
  const { port } = new URL(url);
  const body = JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });
  const script = `
    const socket = require('node:net').connect(${port}, '127.0.0.1');
    ${read ? '' : 'socket.pause();'}
    socket.write(${JSON.stringify(
      `POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    )});
    let text = '';
    socket.on('data', (d) => {
      text += d;
      // The answer is chunked: it ends with the empty chunk.
      if (text.endsWith('\\r\\n0\\r\\n\\r\\n')) process.stdout.write('read');
    });
    setInterval(() => {}, 1000);
  `;
  return spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
}

let server: FaultServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((r) => setTimeout(r, 10));
}

describe('the chaos server bills on delivery', () => {
  const start = () =>
    startFaultServer({
      seed: 1,
      maxRequests: 10,
      maxLifetimeMs: 60_000,
      minLatencyMs: 0,
      spreadMs: 0,
      faultOf: () => 'ok',
    });

  it('an answer the killed client had read is delivered', async () => {
    server = await start();
    const child = client(server.url, true);
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
    });
    await until(() => out.includes('read'));
    child.kill('SIGKILL');
    expect(await server.connectionsClosed(30_000)).toBe(true);
    expect(server.ledger.answers).toHaveLength(1);
    expect(server.ledger.answers[0]).toMatchObject({ sent: true, delivery: 'delivered' });
  });

  it('an answer still unread when the client is killed is sent, and unread', async () => {
    server = await start();
    const child = client(server.url, false);
    const ledger = server.ledger;
    await until(() => ledger.answers[0]?.sent === true);
    child.kill('SIGKILL');
    expect(await server.connectionsClosed(30_000)).toBe(true);
    expect(server.ledger.answers[0]).toMatchObject({ sent: true, delivery: 'unread' });
  });
});

describe('splitBilling', () => {
  const answer = (
    serial: number,
    digest: string,
    phase: number,
    delivery: BilledAnswer['delivery'],
    fault: BilledAnswer['fault'] = 'ok',
  ): BilledAnswer => ({ serial, digest: digest.repeat(12), usd: 0.25, fault, phase, sent: true, delivery });
  const token = (digest: string) => answerToken(digest.repeat(12));

  it('tells a request paid again after its answer was stored from one lost in flight at a kill', () => {
    const answers = [
      answer(1, 'a', 0, 'delivered'), // stored before the kill, yet asked again: the bug class
      answer(2, 'b', 0, 'unread'), // in flight at the kill
      answer(3, 'c', 0, 'delivered'), // read by the killed process, not yet stored
      answer(4, 'f', 0, 'delivered', 'off_format'), // repaired, stored by its request's token
      answer(5, 'a', 1, 'delivered'),
      answer(6, 'b', 1, 'delivered'),
      answer(7, 'c', 1, 'delivered'),
      answer(8, 'd', 1, 'delivered'),
      answer(9, 'f', 1, 'delivered'),
    ];
    const afterKill = new Set([answerId(1), token('a'), token('f')]);
    const final = new Set(['a', 'b', 'c', 'd', 'f'].map(token));
    const split = splitBilling(answers, [afterKill, final]);
    expect(split).toMatchObject({
      billedCalls: 9,
      billedUsd: 2.25,
      billedTwice: 4,
      paidAgainAfterReceipt: 2,
      paidAgainDigests: ['a'.repeat(12), 'f'.repeat(12)],
      lostInFlightAtKills: 2,
      lostInFlightRead: 1,
      lostInFlightUsd: 0.5,
      notReceived: 0,
      billedNeverStored: 0,
      expectedReportUsd: 1.75,
    });
  });

  it('tells a request the same process asked again after storing its answer from one it never received', () => {
    const answers = [
      answer(1, 'a', 0, 'delivered'), // stored, then asked again
      answer(2, 'a', 0, 'delivered'),
      answer(3, 'b', 0, 'delivered'), // never stored: the client had given up on it
      answer(4, 'b', 0, 'delivered'),
      answer(5, 'e', 0, 'delivered'),
    ];
    const split = splitBilling(answers, [new Set([token('a'), answerId(1), token('b'), answerId(4)])]);
    expect(split).toMatchObject({
      billedTwice: 2,
      paidAgainAfterReceipt: 1,
      lostInFlightAtKills: 0,
      notReceived: 1,
      notReceivedUsd: 0.25,
      notReceivedRead: 1,
      billedNeverStored: 1,
      deliveredCalls: 5,
      expectedReportUsd: 1,
    });
  });
});
